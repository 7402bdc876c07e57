package hostagent

import (
	"context"

	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/surface/webview"
)

// efforts are the settings view's choices of effort; "default" is none
// (the provider's own).
var efforts = []string{"default", string(provider.EffortLow), string(provider.EffortMedium), string(provider.EffortHigh)}

// ModelSettings implements webview.Settings: the host's, keys masked.
func (p settings) ModelSettings(context.Context) (webview.ModelSettings, error) {
	s := p.h.Models().Settings()
	out := webview.ModelSettings{Model: s.Model, CompletionModel: s.CompletionModel, Models: s.Models,
		Effort: string(s.Effort), Efforts: efforts, KeysFile: s.KeysFile, KeysProblem: s.KeysProblem}
	if out.Effort == "" {
		out.Effort = "default"
	}
	for _, k := range s.Keys {
		out.Providers = append(out.Providers, webview.ProviderKey{Name: k.Provider, Env: k.Env, Source: string(k.Source),
			Mask: k.Mask, Shadowed: k.Shadowed, URLEnv: k.URLEnv, URL: k.URL, URLSource: string(k.URLSource), URLShadowed: k.URLShadowed})
	}
	return out, nil
}

// SetKey implements webview.Settings.
func (p settings) SetKey(ctx context.Context, providerName, key string) error {
	return p.h.Models().SetKey(panelCtx(ctx), providerName, key)
}

// SetBaseURL implements webview.Settings.
func (p settings) SetBaseURL(ctx context.Context, providerName, u string) error {
	return p.h.Models().SetBaseURL(panelCtx(ctx), providerName, u)
}

// SetEffort implements webview.Settings, as %agent effort does.
func (p settings) SetEffort(ctx context.Context, effort string) error {
	e, err := provider.ParseEffort(effort)
	if err != nil {
		return err
	}
	return p.h.Models().SetEffort(panelCtx(ctx), e)
}

var _ webview.Settings = settings{}
