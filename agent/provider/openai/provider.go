package openai

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/agentkernel/agentkernel/agent/provider"
)

// DefaultBaseURL is OpenAI's API.
const DefaultBaseURL = "https://api.openai.com/v1"

// Config configures a Provider. The zero value (plus an APIKey and a
// Model) talks to OpenAI.
type Config struct {
	// Name is the provider's name in model strings and errors; default
	// "openai" (use "ollama", "vllm", … for local servers).
	Name string
	// APIKey is sent as a bearer token; local servers need none. It never
	// appears in errors.
	APIKey string
	// BaseURL of the API; default DefaultBaseURL. Local servers:
	// Ollama "http://localhost:11434/v1", vLLM "http://localhost:8000/v1",
	// llama.cpp "http://localhost:8080/v1", LM Studio "http://localhost:1234/v1".
	BaseURL string
	// Model is the model id used when a Request names none.
	Model string
	// HTTPClient makes the requests; default http.DefaultClient. Its
	// Timeout, if any, bounds a whole stream.
	HTTPClient *http.Client
	// Info overrides the price table entry of Model (KnownModel) when not
	// nil; its ID is set to Model when empty.
	Info *provider.ModelInfo
	// MaxTokens is the default output cap when a Request sets none; 0
	// sends none (the server's default).
	MaxTokens int
}

// Provider streams chat completions. It is safe for concurrent use.
type Provider struct {
	name   string
	key    string
	model  string
	info   provider.ModelInfo
	client sdk.Client
	cfg    Config
	// maxCompletion sends max_completion_tokens (OpenAI's own API, which
	// rejects max_tokens for reasoning models) rather than max_tokens
	// (which local servers understand).
	maxCompletion bool
}

var _ provider.Provider = (*Provider)(nil)

// New returns a Provider for cfg. The SDK's own retries are off: the task
// loop retries, using the *provider.APIError a stream returns.
func New(cfg Config) (*Provider, error) {
	if cfg.Name == "" {
		cfg.Name = "openai"
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s: invalid base URL %q (want http(s)://host[:port]/path)", cfg.Name, provider.ScrubKey(cfg.BaseURL, cfg.APIKey))
	}
	p := &Provider{name: cfg.Name, key: cfg.APIKey, model: cfg.Model, cfg: cfg}
	p.maxCompletion = u.Host == "api.openai.com"
	if cfg.Info != nil {
		p.info = *cfg.Info
		if p.info.ID == "" {
			p.info.ID = cfg.Model
		}
	} else {
		p.info, _ = KnownModel(cfg.Model)
	}
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		option.WithAPIKey(cfg.APIKey),
		option.WithMaxRetries(0),
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	p.client = sdk.NewClient(opts...)
	return p, nil
}

// Name returns the configured name ("openai" by default).
func (p *Provider) Name() string { return p.name }

// Model returns the configured model's info.
func (p *Provider) Model() provider.ModelInfo { return p.info }

// Stream starts a streaming chat completion. HTTP errors (429, 500, …)
// are returned here as *provider.APIError; errors after the stream started
// come from Next.
func (p *Provider) Stream(ctx context.Context, req provider.Request) (provider.Stream, error) {
	model := req.Model
	if model == "" {
		model = p.model
	}
	if model == "" {
		return nil, fmt.Errorf("%s: %w", p.name, provider.ErrNotConfigured)
	}
	msgs, err := chatMessages(req.System, req.Messages)
	if err != nil {
		return nil, fmt.Errorf("%s: map history: %w", p.name, err)
	}
	params := sdk.ChatCompletionNewParams{
		Model:         model,
		Messages:      msgs,
		StreamOptions: sdk.ChatCompletionStreamOptionsParam{IncludeUsage: sdk.Bool(true)},
	}
	if len(req.Tools) > 0 {
		if params.Tools, err = chatTools(req.Tools); err != nil {
			return nil, fmt.Errorf("%s: map tools: %w", p.name, err)
		}
	}
	maxTokens := req.MaxTokens
	if maxTokens == 0 {
		maxTokens = p.cfg.MaxTokens
	}
	if maxTokens > 0 {
		if p.maxCompletion {
			params.MaxCompletionTokens = sdk.Int(int64(maxTokens))
		} else {
			params.MaxTokens = sdk.Int(int64(maxTokens))
		}
	}
	if req.Effort != "" {
		params.ReasoningEffort = shared.ReasoningEffort(req.Effort)
	}
	sctx, cancel := context.WithCancel(ctx)
	// The SDK makes the request and hands over the response; the stream
	// reads its events (the SDK's stream over it is never read).
	var resp *http.Response
	s := p.client.Chat.Completions.NewStreaming(sctx, params, option.WithResponseInto(&resp))
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
