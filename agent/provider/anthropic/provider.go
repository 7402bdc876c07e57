package anthropic

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/agentkernel/agentkernel/agent/provider"
)

// DefaultBaseURL is Anthropic's API.
const DefaultBaseURL = "https://api.anthropic.com"

// DefaultMaxTokens is the output cap when neither the Request, the Config
// nor the price table gives one.
const DefaultMaxTokens = 8192

// Config configures a Provider. The zero value (plus an APIKey and a
// Model) talks to Anthropic. The SDK's environment defaults
// (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, profiles) are not read: the
// caller resolves those into Config.
type Config struct {
	// APIKey is sent as x-api-key. It never appears in errors.
	APIKey string
	// BaseURL of the API; default DefaultBaseURL.
	BaseURL string
	// Model is the model id used when a Request names none.
	Model string
	// HTTPClient makes the requests; default http.DefaultClient.
	HTTPClient *http.Client
	// Info overrides the price table entry of Model (KnownModel) when not
	// nil; its ID is set to Model when empty.
	Info *provider.ModelInfo
	// MaxTokens is the output cap when a Request sets none; default the
	// model's MaxOutput from the table, else DefaultMaxTokens.
	MaxTokens int
	// ThinkingBudget, when > 0, enables extended thinking with this many
	// tokens (at least 1024, and less than the output cap).
	ThinkingBudget int
	// NoCache turns off the prompt-cache breakpoints (on the system prompt,
	// the last tool and the last message).
	NoCache bool
}

// Provider streams the Messages API. It is safe for concurrent use.
type Provider struct {
	name   string
	key    string
	model  string
	info   provider.ModelInfo
	cfg    Config
	client sdk.Client
}

var _ provider.Provider = (*Provider)(nil)

// New returns a Provider for cfg. The SDK's own retries are off: the task
// loop retries, using the *provider.APIError a stream returns.
func New(cfg Config) (*Provider, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("anthropic: invalid base URL %q (want http(s)://host[:port])", provider.ScrubKey(cfg.BaseURL, cfg.APIKey))
	}
	p := &Provider{name: "anthropic", key: cfg.APIKey, model: cfg.Model, cfg: cfg}
	if cfg.Info != nil {
		p.info = *cfg.Info
		if p.info.ID == "" {
			p.info.ID = cfg.Model
		}
	} else {
		p.info, _ = KnownModel(cfg.Model)
	}
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(cfg.BaseURL),
		option.WithAPIKey(cfg.APIKey),
		option.WithMaxRetries(0),
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	} else {
		opts = append(opts, option.WithHTTPClient(http.DefaultClient))
	}
	p.client = sdk.NewClient(opts...)
	return p, nil
}

// Name returns "anthropic".
func (p *Provider) Name() string { return p.name }

// Model returns the configured model's info.
func (p *Provider) Model() provider.ModelInfo { return p.info }

// Stream starts a streaming Messages call. HTTP errors (429, 529, …) are
// returned here as *provider.APIError; errors after the stream started
// (including `event: error`) come from Next.
func (p *Provider) Stream(ctx context.Context, req provider.Request) (provider.Stream, error) {
	model := req.Model
	if model == "" {
		model = p.model
	}
	if model == "" {
		return nil, fmt.Errorf("%s: %w", p.name, provider.ErrNotConfigured)
	}
	cache := !p.cfg.NoCache
	msgs, err := apiMessages(req.Messages, cache)
	if err != nil {
		return nil, fmt.Errorf("%s: map history: %w", p.name, err)
	}
	maxTokens := req.MaxTokens
	if maxTokens == 0 {
		maxTokens = p.cfg.MaxTokens
	}
	if maxTokens == 0 {
		info := p.info
		if model != p.model {
			info, _ = KnownModel(model)
		}
		maxTokens = info.MaxOutput
	}
	if maxTokens == 0 {
		maxTokens = DefaultMaxTokens
	}
	params := sdk.MessageNewParams{
		Model:     sdk.Model(model),
		MaxTokens: int64(maxTokens),
		Messages:  msgs,
	}
	if req.System != "" {
		sys := sdk.TextBlockParam{Text: req.System}
		if cache {
			sys.CacheControl = sdk.NewCacheControlEphemeralParam()
		}
		params.System = []sdk.TextBlockParam{sys}
	}
	if len(req.Tools) > 0 {
		if params.Tools, err = apiTools(req.Tools, cache); err != nil {
			return nil, fmt.Errorf("%s: map tools: %w", p.name, err)
		}
	}
	b := p.cfg.ThinkingBudget
	if e := provider.EffortBudget(req.Effort); e > 0 {
		b = e
	}
	if b > 0 {
		// The budget counts within max_tokens: the answer keeps room.
		if b >= maxTokens {
			maxTokens = b + DefaultMaxTokens
			params.MaxTokens = int64(maxTokens)
		}
		params.Thinking = sdk.ThinkingConfigParamOfEnabled(int64(b))
	}
	sctx, cancel := context.WithCancel(ctx)
	// The SDK makes the request and hands over the response; the stream
	// reads its events (the SDK's stream over it is never read).
	var resp *http.Response
	s := p.client.Messages.NewStreaming(sctx, params, option.WithResponseInto(&resp))
	if err := s.Err(); err != nil {
		_ = s.Close()
		err = p.mapError(ctx, err)
		cancel()
		return nil, err
	}
	if resp == nil || resp.Body == nil {
		_ = s.Close()
		cancel()
		return nil, &provider.APIError{Provider: p.name, Type: "invalid_response", Message: "the SDK handed over no response"}
	}
	return newStream(p, sctx, cancel, resp), nil
}
