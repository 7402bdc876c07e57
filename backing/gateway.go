package backing

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Gateway is a Jupyter server that runs backing kernels: any server with
// the kernels REST and WebSocket API (Jupyter Server, Notebook, Kernel
// Gateway, Enterprise Gateway). Its settings have the names and meanings
// of Jupyter Server's gateway client.
type Gateway struct {
	// URL is the server's base URL (JUPYTER_GATEWAY_URL), e.g.
	// http://eg.example:8888 or https://hub.example/user/ana/.
	URL string
	// AuthToken is sent as "Authorization: token …"
	// (JUPYTER_GATEWAY_AUTH_TOKEN). It is never logged or shown.
	AuthToken string
	// Headers are more HTTP headers (JUPYTER_GATEWAY_HEADERS, a JSON
	// object).
	Headers map[string]string
	// ValidateCert checks the server's TLS certificate
	// (JUPYTER_GATEWAY_VALIDATE_CERT; default true).
	ValidateCert bool
	// ConnectTimeout bounds connecting (JUPYTER_GATEWAY_CONNECT_TIMEOUT,
	// seconds; default 40), RequestTimeout a request, a kernel start
	// included (JUPYTER_GATEWAY_REQUEST_TIMEOUT; default 42).
	ConnectTimeout, RequestTimeout time.Duration
}

// GatewayFromEnv reads Jupyter Server's gateway variables. ok is false when
// JUPYTER_GATEWAY_URL is not set: kernels run on this machine.
func GatewayFromEnv(getenv func(string) string) (g Gateway, ok bool, err error) {
	g = Gateway{URL: strings.TrimSpace(getenv("JUPYTER_GATEWAY_URL")), AuthToken: getenv("JUPYTER_GATEWAY_AUTH_TOKEN"),
		ValidateCert: true}
	if g.URL == "" {
		return g, false, nil
	}
	if h := getenv("JUPYTER_GATEWAY_HEADERS"); strings.TrimSpace(h) != "" {
		if err := json.Unmarshal([]byte(h), &g.Headers); err != nil {
			return g, true, fmt.Errorf("JUPYTER_GATEWAY_HEADERS: want a JSON object of strings: %w", err)
		}
	}
	if v := strings.TrimSpace(getenv("JUPYTER_GATEWAY_VALIDATE_CERT")); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return g, true, fmt.Errorf("JUPYTER_GATEWAY_VALIDATE_CERT=%q: want true or false", v)
		}
		g.ValidateCert = b
	}
	for _, t := range []struct {
		name string
		to   *time.Duration
	}{{"JUPYTER_GATEWAY_CONNECT_TIMEOUT", &g.ConnectTimeout}, {"JUPYTER_GATEWAY_REQUEST_TIMEOUT", &g.RequestTimeout}} {
		if v := strings.TrimSpace(getenv(t.name)); v != "" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f <= 0 {
				return g, true, fmt.Errorf("%s=%q: want seconds", t.name, v)
			}
			*t.to = time.Duration(f * float64(time.Second))
		}
	}
	return g, true, g.check()
}

func (g Gateway) withDefaults() Gateway {
	if g.ConnectTimeout <= 0 {
		g.ConnectTimeout = 40 * time.Second
	}
	if g.RequestTimeout <= 0 {
		g.RequestTimeout = 42 * time.Second
	}
	return g
}

// check validates the URL.
func (g Gateway) check() error {
	u, err := url.Parse(g.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("gateway URL %q: want http(s)://host[:port][/base]", g.URL)
	}
	return nil
}

// ErrGateway is wrapped by the errors of a gateway: the server could not
// be reached, refused the token, or has no such kernelspec.
var ErrGateway = errors.New("backing: gateway")

// endpoint returns the URL of path under the server's base.
func (g Gateway) endpoint(path string) string {
	return strings.TrimRight(g.URL, "/") + path
}

// wsEndpoint is endpoint with the ws(s) scheme.
func (g Gateway) wsEndpoint(path string) string {
	u := g.endpoint(path)
	if rest, ok := strings.CutPrefix(u, "https://"); ok {
		return "wss://" + rest
	}
	return "ws://" + strings.TrimPrefix(u, "http://")
}

// header returns the headers every request carries.
func (g Gateway) header() http.Header {
	h := http.Header{}
	for k, v := range g.Headers {
		h.Set(k, v)
	}
	if g.AuthToken != "" {
		h.Set("Authorization", "token "+g.AuthToken)
	}
	return h
}

// HTTPClient returns the client Remote uses for the server's REST API and
// WebSocket: it checks the certificate as ValidateCert says, and its
// connections acknowledge what they read at once (withQuickAck).
func (g Gateway) HTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialer.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return withQuickAck(c), nil
	}
	if !g.ValidateCert {
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the user's choice (JUPYTER_GATEWAY_VALIDATE_CERT=false)
	}
	return &http.Client{Transport: tr}
}
