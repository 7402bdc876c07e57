package anthropic

import (
	"fmt"
	"log/slog"
)

// Format prints c with its API key redacted, whatever the verb, so that a
// Config in a log line or an error never shows the key.
func (c Config) Format(f fmt.State, verb rune) {
	key := ""
	if c.APIKey != "" {
		key = "[redacted]"
	}
	fmt.Fprintf(f, "anthropic.Config{BaseURL:%q Model:%q APIKey:%q}", c.BaseURL, c.Model, key)
}

// LogValue keeps the API key out of structured logs.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(slog.String("baseURL", c.BaseURL), slog.String("model", c.Model))
}

// Format prints p without its API key.
func (p *Provider) Format(f fmt.State, verb rune) {
	fmt.Fprintf(f, "anthropic.Provider{Name:%q BaseURL:%q Model:%q}", p.name, p.cfg.BaseURL, p.model)
}

// LogValue keeps the API key out of structured logs.
func (p *Provider) LogValue() slog.Value {
	return slog.GroupValue(slog.String("name", p.name), slog.String("baseURL", p.cfg.BaseURL), slog.String("model", p.model))
}
