package agent

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// ToolWebFetch fetches a web page (when WebFetch allows some sites).
const ToolWebFetch = "web_fetch"

// WebFetch configures the web_fetch tool. It is offered only when Allow
// names sites: the tool is off by default.
type WebFetch struct {
	// Allow are the host names the tool may fetch from: "docs.python.org",
	// or "*.readthedocs.io" for its subdomains (and itself).
	Allow []string `json:"allow"`
	// MaxBytes caps what is read of a response; default 200,000.
	MaxBytes int `json:"maxBytes"`
	// Client makes the requests; default one with a 20 s timeout that
	// follows redirects to allowed hosts only.
	Client *http.Client `json:"-"`
}

// Allowed reports whether host may be fetched from.
func (w *WebFetch) Allowed(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, a := range w.Allow {
		a = strings.ToLower(strings.TrimSpace(a))
		if rest, ok := strings.CutPrefix(a, "*."); ok {
			if host == rest || strings.HasSuffix(host, "."+rest) {
				return true
			}
		} else if host == a {
			return true
		}
	}
	return false
}

func (w *WebFetch) client() *http.Client {
	if w.Client != nil {
		return w.Client
	}
	return &http.Client{Timeout: 20 * time.Second, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= 5 {
			return errors.New("too many redirects")
		}
		if !w.Allowed(req.URL.Hostname()) {
			return fmt.Errorf("redirected to %s, which is not an allowed site", req.URL.Hostname())
		}
		return nil
	}}
}

func (w *WebFetch) maxBytes() int {
	if w.MaxBytes > 0 {
		return w.MaxBytes
	}
	return 200_000
}

// webFetch is the web_fetch tool: GET an allowed http(s) URL, its text
// (an HTML page's text without its markup), capped.
func (tb *Toolbox) webFetch(ctx context.Context, in map[string]any) (Result, error) {
	w := tb.opts.WebFetch
	raw := in["url"].(string)
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Result{}, fmt.Errorf("web_fetch: %q is not an http(s) URL", raw)
	}
	if !w.Allowed(u.Hostname()) {
		return Result{}, fmt.Errorf("web_fetch: %s is not an allowed site (allowed: %s)", u.Hostname(), strings.Join(w.Allow, ", "))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Result{}, fmt.Errorf("web_fetch: %w", err)
	}
	req.Header.Set("User-Agent", "agentkernel-web-fetch")
	req.Header.Set("Accept", "text/html, text/plain, text/markdown, application/json;q=0.9, */*;q=0.1")
	resp, err := w.client().Do(req)
	if err != nil {
		return Result{}, fmt.Errorf("web_fetch: %w", err)
	}
	defer resp.Body.Close()
	limit := w.maxBytes()
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(limit)+1))
	if err != nil {
		return Result{}, fmt.Errorf("web_fetch: read: %w", err)
	}
	cut := len(body) > limit
	if cut {
		body = body[:limit]
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode >= 400 {
		return Result{}, fmt.Errorf("web_fetch: %s: HTTP %d", u, resp.StatusCode)
	}
	var text string
	switch {
	case ct == "text/html" || ct == "application/xhtml+xml":
		text = htmlText(string(body))
	case strings.HasPrefix(ct, "text/"), ct == "application/json", strings.HasSuffix(ct, "+json"), ct == "application/xml", ct == "":
		text = string(body)
	default:
		return Result{}, fmt.Errorf("web_fetch: %s is %s, not text", u, ct)
	}
	head := fmt.Sprintf("[%s, HTTP %d, %s]\n", u, resp.StatusCode, ct)
	if cut {
		text += fmt.Sprintf("\n[cut at %d bytes]", limit)
	}
	return Result{Text: tb.capText(head + text)}, nil
}

var (
	htmlDrop   = regexp.MustCompile(`(?is)<(script|style|noscript|svg|head)\b.*?</(script|style|noscript|svg|head)>`)
	htmlBreak  = regexp.MustCompile(`(?i)<(br|/p|/div|/h[1-6]|/li|/tr|/pre|/section|/article)\b[^>]*>`)
	htmlTag    = regexp.MustCompile(`(?s)<[^>]*>`)
	blankLines = regexp.MustCompile(`\n[ \t]*(\n[ \t]*)+`)
	spaces     = regexp.MustCompile(`[ \t]+`)
)

// htmlText is an HTML page's text: scripts and styles dropped, tags
// removed, entities decoded, blank runs collapsed.
func htmlText(s string) string {
	s = htmlDrop.ReplaceAllString(s, "")
	s = htmlBreak.ReplaceAllString(s, "\n")
	s = htmlTag.ReplaceAllString(s, "")
	s = html.UnescapeString(s)
	s = spaces.ReplaceAllString(s, " ")
	s = blankLines.ReplaceAllString(s, "\n\n")
	return strings.TrimSpace(s)
}
