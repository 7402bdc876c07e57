package backing

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestRunReaper: after the runner's pipe ends without "q", the reaper
// deletes the kernels still listed, with the server's token; after "q"
// it deletes nothing.
func TestRunReaper(t *testing.T) {
	var (
		mu      sync.Mutex
		deleted []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodDelete || r.Header.Get("Authorization") != "token s3cret" {
			http.Error(w, "no", http.StatusForbidden)
			return
		}
		mu.Lock()
		deleted = append(deleted, strings.TrimPrefix(r.URL.Path, "/api/kernels/"))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	settings, _ := json.Marshal(Gateway{URL: srv.URL, AuthToken: "s3cret", ValidateCert: true})
	for _, tt := range []struct {
		name, lines string
		want        []string
	}{
		{"killed", "+k1\n+k2\n-k2\n+k3\n", []string{"k1", "k3"}},
		{"closed", "+k1\n-k1\n+k2\nq\n", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			deleted = nil
			mu.Unlock()
			in := strings.NewReader(string(settings) + "\n" + tt.lines)
			if code := RunReaper(in, io.Discard); code != 0 {
				t.Fatalf("exit code %d", code)
			}
			mu.Lock()
			defer mu.Unlock()
			slices.Sort(deleted)
			if !slices.Equal(deleted, tt.want) {
				t.Fatalf("deleted %v, want %v", deleted, tt.want)
			}
		})
	}
}
