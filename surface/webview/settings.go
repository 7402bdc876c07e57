package webview

import "context"

// The settings view of the panel: the models and the providers, a model
// picker, a key and a base URL per provider (an Ollama host), the effort. A key goes one way only, from a
// client to the Agent (setKey): no frame ever carries one back, the
// modelSettings frame shows a mask ("set, ends in abcd"); nothing of it
// enters the mirrored state; the panel logs no frame's content.

// The client → server frame types of the settings view.
const (
	TypeGetSettings = "getSettings"
	TypeSetKey      = "setKey"
	TypeSetBaseURL  = "setBaseURL"
	TypeSetEffort   = "setEffort"
)

// maxKeyBytes caps a setKey's key, and a setBaseURL's URL (the Agent
// checks them further).
const maxKeyBytes = 4096

// Settings is what an Agent offers the settings view, when it offers one
// (an Agent without it answers the view's frames with an error). Its methods may be called concurrently.
type Settings interface {
	// ModelSettings returns what the view shows: never a key.
	ModelSettings(ctx context.Context) (ModelSettings, error)
	// SetKey saves key as provider's API key ("" removes it); the next
	// request of that provider's models uses it. The error never holds
	// the key.
	SetKey(ctx context.Context, provider, key string) error
	// SetBaseURL saves u as the base URL of provider's server ("" removes
	// it: the default server); the next request of that provider's models
	// goes there. The error never holds the URL.
	SetBaseURL(ctx context.Context, provider, u string) error
	// SetEffort sets the reasoning effort: low, medium, high or "" (the
	// provider's default).
	SetEffort(ctx context.Context, effort string) error
}

// ModelSettings is the settings view's content (the modelSettings frame).
type ModelSettings struct {
	Model           string        `json:"model"`
	CompletionModel string        `json:"completionModel,omitempty"`
	Models          []string      `json:"models"`
	Effort          string        `json:"effort"`
	Efforts         []string      `json:"efforts"`
	Providers       []ProviderKey `json:"providers"`
	// KeysFile is where saved keys are kept; "" when keys cannot be saved.
	KeysFile string `json:"keysFile,omitempty"`
	// KeysProblem is why the saved keys cannot be used, if they cannot.
	KeysProblem string `json:"keysProblem,omitempty"`
}

// ProviderKey is a provider's key and base URL as the view shows them.
type ProviderKey struct {
	Name string `json:"name"`
	// Env is the environment variable that wins over a saved key; "" for
	// a provider that takes no key (ollama).
	Env string `json:"env"`
	// Source is "environment", "file" (saved here) or "" (none).
	Source string `json:"source"`
	// Mask is "set" or "set, ends in abcd"; "" when there is no key.
	Mask string `json:"mask,omitempty"`
	// Shadowed: a saved key that the environment's hides.
	Shadowed bool `json:"shadowed,omitempty"`
	// URLEnv is the environment variable that wins over a saved base URL.
	URLEnv string `json:"urlEnv"`
	// URL is the base URL in use ("": the provider's default server);
	// URLSource is "environment", "file" or "".
	URL       string `json:"url,omitempty"`
	URLSource string `json:"urlSource"`
	// URLShadowed: a saved base URL that the environment's hides.
	URLShadowed bool `json:"urlShadowed,omitempty"`
}

type modelSettingsFrame struct {
	V    int    `json:"v"`
	Type string `json:"type"` // modelSettings
	ID   string `json:"id,omitempty"`
	ModelSettings
}

// settingsChange is the run of a settings view's frame: change (nil for
// getSettings) and then the view's content, which goes to c alone, as the
// frame's answer.
func settingsChange(change func(s Settings, ctx context.Context, in Inbound) error) func(*Panel, context.Context, *conn, Inbound) (bool, error) {
	return func(p *Panel, ctx context.Context, c *conn, in Inbound) (bool, error) {
		s := p.agent.Settings
		if s == nil {
			return false, errNoSettings
		}
		if change != nil {
			if err := change(s, ctx, in); err != nil {
				return false, err
			}
		}
		ms, err := s.ModelSettings(ctx)
		if err != nil {
			return false, err
		}
		if ms.Models == nil {
			ms.Models = []string{}
		}
		if ms.Providers == nil {
			ms.Providers = []ProviderKey{}
		}
		p.hub.sendTo(c, mustJSON(modelSettingsFrame{V: ProtocolVersion, Type: "modelSettings", ID: in.ID, ModelSettings: ms}))
		return true, nil
	}
}

type settingsError string

func (e settingsError) Error() string { return string(e) }

// errNoSettings answers the settings view's frames of an Agent without one.
const errNoSettings = settingsError("this kernel offers no settings view")
