package backing

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestInterruptedInput: code waiting in input() is interrupted, and the
// frontend's prompt is abandoned (Input returns context.Canceled, as the
// bridge's does when an interrupt cancels it). The code must stop with
// KeyboardInterrupt, not go on with an empty answer: no input_reply may
// race the interrupt. Over a gateway the interrupt is an HTTP request to
// the server, slower than a reply on the open WebSocket, and the protocol
// suite's interrupt of input() failed now and then.
func TestInterruptedInput(t *testing.T) {
	runners := []struct {
		name string
		new  func(t *testing.T) Runner
	}{
		{"local", func(t *testing.T) Runner { needPython(t); return NewLocal(LocalOptions{}) }},
		{"gateway", func(t *testing.T) Runner {
			r, err := NewRemote(RemoteOptions{Gateway: jupyterServer(t, t.TempDir())})
			if err != nil {
				t.Fatal(err)
			}
			return r
		}},
	}
	for _, rt := range runners {
		t.Run(rt.name, func(t *testing.T) {
			r := rt.new(t)
			defer r.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			asked := make(chan struct{}, 1)
			done := make(chan struct{})
			var res Result
			var err error
			go func() {
				defer close(done)
				res, err = r.Execute(ctx, Exec{Code: "x = input('name? ')\nprint('went on with', repr(x))",
					Input: func(prompt string, password bool) (string, error) {
						asked <- struct{}{}
						return "", fmt.Errorf("the prompt was abandoned: %w", context.Canceled)
					}})
			}()
			select {
			case <-asked:
			case <-done:
				t.Fatalf("the cell ended without asking: %+v, %v", res, err)
			}
			// The interrupt comes late, as over a slow network: without a
			// reply the code must still be waiting for one.
			time.Sleep(500 * time.Millisecond)
			if err := r.Interrupt(ctx); err != nil {
				t.Fatal(err)
			}
			<-done
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(res.Stdout, "went on") || res.Error == nil || res.Error.Name != "KeyboardInterrupt" {
				t.Fatalf("the interrupted input: %+v (error %+v), want KeyboardInterrupt and nothing after", res, res.Error)
			}
			if res, err := r.Execute(ctx, Exec{Code: "'still here'"}); err != nil || res.Text != "'still here'\n" {
				t.Fatalf("after the interrupt: %+v, %v", res, err)
			}
		})
	}
}
