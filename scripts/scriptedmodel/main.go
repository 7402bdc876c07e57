// Command scriptedmodel runs the scripted model server (package
// agent/provider/scripted) as a process, for tests in other languages. It
// prints its base URL on the first line of stdout and serves until killed
// or stdin closes.
//
// Control endpoints, next to the model APIs (/v1/chat/completions and
// /v1/messages):
//
//	POST /_enqueue   a JSON array of turns, queued in order
//	GET  /_requests  a JSON array of the requests received: {n, path, body, key, received, done}
//	                 (when the request was read and its answer ended, in ms since the Unix epoch)
//	GET  /_pending   the number of queued turns
//
// A turn is {"status": 429, "retryAfter": "0"} (an HTTP error) or
// {"steps": [...]} with steps such as {"text": ["Hel", "lo"]},
// {"reasoning": ["..."]}, {"signature": "sig"},
// {"toolCall": {"id": "c1", "name": "execute_code", "args": ["{\"code\":", "\"1\"}"]}},
// {"usage": {"input": 10, "output": 5}}, {"stop": "end_turn"},
// {"delayMs": 100}, {"stall": true}, {"error": {"type": "overloaded_error", "message": "…"}},
// {"ping": true}, {"disconnect": true}.
package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/agentkernel/agentkernel/tests/scripted"
)

type stepJSON struct {
	Text      []string `json:"text"`
	Reasoning []string `json:"reasoning"`
	Signature string   `json:"signature"`
	ToolCall  *struct {
		ID   string   `json:"id"`
		Name string   `json:"name"`
		Args []string `json:"args"`
	} `json:"toolCall"`
	Usage *struct {
		Input, Output, CacheRead, CacheWrite int
	} `json:"usage"`
	Stop       string `json:"stop"`
	DelayMs    int    `json:"delayMs"`
	Stall      bool   `json:"stall"`
	Ping       bool   `json:"ping"`
	Disconnect bool   `json:"disconnect"`
	Error      *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

type turnJSON struct {
	Status     int        `json:"status"`
	RetryAfter string     `json:"retryAfter"`
	Steps      []stepJSON `json:"steps"`
}

func (t turnJSON) turn() (scripted.Turn, error) {
	if t.Status != 0 && t.Status != 200 {
		return scripted.Fail(t.Status, t.RetryAfter), nil
	}
	var steps []scripted.Step
	for i, s := range t.Steps {
		switch {
		case s.Text != nil:
			steps = append(steps, scripted.Text(s.Text...))
		case s.Reasoning != nil:
			steps = append(steps, scripted.Reasoning(s.Reasoning...))
		case s.Signature != "":
			steps = append(steps, scripted.Signature(s.Signature))
		case s.ToolCall != nil:
			steps = append(steps, scripted.ToolCall(s.ToolCall.ID, s.ToolCall.Name, s.ToolCall.Args...))
		case s.Usage != nil:
			steps = append(steps, scripted.UsageStep(scripted.Usage{Input: s.Usage.Input, Output: s.Usage.Output,
				CacheRead: s.Usage.CacheRead, CacheWrite: s.Usage.CacheWrite}))
		case s.Stop != "":
			steps = append(steps, scripted.Stop(s.Stop))
		case s.DelayMs > 0:
			steps = append(steps, scripted.Delay(time.Duration(s.DelayMs)*time.Millisecond))
		case s.Stall:
			steps = append(steps, scripted.Stall())
		case s.Ping:
			steps = append(steps, scripted.Ping())
		case s.Disconnect:
			steps = append(steps, scripted.Disconnect())
		case s.Error != nil:
			steps = append(steps, scripted.StreamError(s.Error.Type, s.Error.Message))
		default:
			return scripted.Turn{}, fmt.Errorf("step %d: empty or unknown step", i)
		}
	}
	return scripted.Reply(steps...), nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "scriptedmodel:", err)
		os.Exit(1)
	}
}

func run() error {
	srv := scripted.New(nil)
	defer srv.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /_enqueue", func(w http.ResponseWriter, r *http.Request) {
		var turns []turnJSON
		if err := json.NewDecoder(io.LimitReader(r.Body, 16<<20)).Decode(&turns); err != nil {
			http.Error(w, "bad turns: "+err.Error(), http.StatusBadRequest)
			return
		}
		for i, tj := range turns {
			t, err := tj.turn()
			if err != nil {
				http.Error(w, fmt.Sprintf("turn %d: %v", i, err), http.StatusBadRequest)
				return
			}
			srv.Enqueue(t)
		}
		fmt.Fprintf(w, "%d\n", srv.Pending())
	})
	mux.HandleFunc("GET /_requests", func(w http.ResponseWriter, r *http.Request) {
		type req struct {
			N    int            `json:"n"`
			Path string         `json:"path"`
			Body map[string]any `json:"body"`
			// Key is the API key the request carried (Authorization:
			// Bearer, or x-api-key): a test checks which key was used.
			Key string `json:"key"`
			// Received is when the request was read, Done when its answer
			// ended (ms since the epoch; 0 while it streams): a benchmark
			// compares them with other clocks of the machine.
			Received float64 `json:"received"`
			Done     float64 `json:"done"`
		}
		var out []req
		for _, q := range srv.Requests() {
			key := cmp.Or(strings.TrimPrefix(q.Header.Get("Authorization"), "Bearer "), q.Header.Get("X-Api-Key"))
			ms := func(t time.Time) float64 {
				if t.IsZero() {
					return 0
				}
				return float64(t.UnixMicro()) / 1000
			}
			out = append(out, req{q.N, q.Path, q.Body, key, ms(q.Received), ms(q.Done)})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	})
	mux.HandleFunc("GET /_pending", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%d\n", srv.Pending())
	})
	mux.Handle("/", srv)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Printf("http://%s\n", l.Addr())
	hs := &http.Server{Handler: mux}
	go func() {
		io.Copy(io.Discard, os.Stdin) // serve until stdin closes
		hs.Close()
	}()
	if err := hs.Serve(l); err != http.ErrServerClosed {
		return err
	}
	return nil
}
