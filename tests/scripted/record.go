package scripted

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
)

// Record returns the body the server streams for t in api's format
// ("openai" or "anthropic"), as it would to a client that asks for usage
// (stream_options.include_usage). Canned serves it again without a server:
// for benchmarks that must not count the server's own work.
func Record(api string, t Turn) ([]byte, error) {
	path := "/v1/chat/completions"
	switch api {
	case "openai":
	case "anthropic":
		path = "/v1/messages"
	default:
		return nil, fmt.Errorf("scripted: record: unknown API %q (want openai or anthropic)", api)
	}
	s := newServer(nil)
	s.Enqueue(t)
	body := `{"model":"scripted-model","stream":true,"stream_options":{"include_usage":true},"messages":[]}`
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
	if rec.Code != http.StatusOK {
		return nil, fmt.Errorf("scripted: record: HTTP %d: %s", rec.Code, rec.Body.String())
	}
	return rec.Body.Bytes(), nil
}

// Canned is an http.RoundTripper (a client's Transport) that answers every
// request with Body as a stream of server-sent events (Record's), at once
// and without a server. Its zero value answers with an empty stream.
type Canned struct{ Body []byte }

// RoundTrip implements http.RoundTripper.
func (c Canned) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	return &http.Response{
		Status: "200 OK", StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"text/event-stream"}},
		Body:          io.NopCloser(bytes.NewReader(c.Body)),
		ContentLength: int64(len(c.Body)),
		Request:       r,
	}, nil
}
