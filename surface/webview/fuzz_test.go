package webview

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// FuzzInbound feeds arbitrary bytes to the inbound decoder: it must never
// panic, must refuse with a *FrameError, and what it accepts must be a
// known type that passes validation again after a round trip.
func FuzzInbound(f *testing.F) {
	for _, s := range []string{
		`{"type":"newTask","text":"hi"}`,
		`{"v":1,"type":"askResponse","id":"a","ts":12,"response":"messageResponse","text":"yes"}`,
		`{"type":"askResponse","ts":12,"response":"allowAll"}`,
		`{"type":"deleteMessage","ts":99}`,
		`{"type":"editMessage","ts":99,"text":"again"}`,
		`{"type":"setPermissionMode","permissionMode":"plan"}`,
		`{"type":"setAgentMode","agentMode":"plan"}`,
		`{"type":"listSessions","search":"x","limit":5}`,
		`{"type":"searchMessages","query":"plot"}`,
		`{"type":"loadSession","sessionId":"abc"}`,
		`{"type":"cancelTask"}`, `{"type":`, `[]`, `null`, `{"type":"x"}`, "\xff\xfe", `{"ts":1e400}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := DecodeInbound(data)
		if err != nil {
			var fe *FrameError
			if !errors.As(err, &fe) || fe.Code == "" {
				t.Fatalf("error %v is not a FrameError with a code", err)
			}
			if len(errorJSON(fe)) == 0 {
				t.Fatal("empty error frame")
			}
			return
		}
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		again, err := DecodeInbound(b)
		if err != nil {
			t.Fatalf("accepted %q but not its re-encoding %s: %v", data, b, err)
		}
		if !reflect.DeepEqual(again, in) {
			t.Fatalf("round trip changed %+v to %+v", in, again)
		}
	})
}
