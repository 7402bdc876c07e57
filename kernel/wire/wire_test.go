package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func mustSigner(t testing.TB, key string) *Signer {
	t.Helper()
	s, err := NewSigner("hmac-sha256", []byte(key), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sample() *Message {
	parent := &Message{Header: NewHeader("client-session", "alice", "execute_request")}
	m, err := Reply(parent, "kernel-session", "execute_reply", map[string]any{"status": "ok", "execution_count": 3})
	if err != nil {
		panic(err)
	}
	m.Identities = [][]byte{[]byte("peer-1"), []byte("peer-2")}
	m.Metadata = json.RawMessage(`{"x":1}`)
	m.Buffers = [][]byte{{0, 1, 2}}
	return m
}

func TestRoundTrip(t *testing.T) {
	s := mustSigner(t, "secret")
	m := sample()
	frames, err := s.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(frames[2]); got != Delimiter {
		t.Fatalf("frame 2 = %q, want delimiter", got)
	}
	if len(frames[3]) != 64 {
		t.Fatalf("signature length %d, want 64 hex digits", len(frames[3]))
	}
	got, err := s.Decode(frames)
	if err != nil {
		t.Fatal(err)
	}
	if got.Header != m.Header {
		t.Errorf("header = %+v, want %+v", got.Header, m.Header)
	}
	if len(got.Identities) != 2 || string(got.Identities[1]) != "peer-2" {
		t.Errorf("identities = %q", got.Identities)
	}
	p, err := got.Parent()
	if err != nil || p.MsgType != "execute_request" || p.Username != "alice" {
		t.Errorf("parent = %+v, %v", p, err)
	}
	var c struct {
		Status string `json:"status"`
		Count  int    `json:"execution_count"`
	}
	if err := got.DecodeContent(&c); err != nil || c.Status != "ok" || c.Count != 3 {
		t.Errorf("content = %+v, %v", c, err)
	}
	if len(got.Buffers) != 1 || !bytes.Equal(got.Buffers[0], []byte{0, 1, 2}) {
		t.Errorf("buffers = %v", got.Buffers)
	}
	if got.Header.Version != ProtocolVersion {
		t.Errorf("version = %q", got.Header.Version)
	}
	if _, err := time.Parse(time.RFC3339Nano, got.Header.Date); err != nil {
		t.Errorf("date %q is not ISO 8601: %v", got.Header.Date, err)
	}
}

// TestKnownSignature checks our HMAC against Python's:
// hmac.new(b"key", b"{}{}{}{}", hashlib.sha256).hexdigest().
func TestKnownSignature(t *testing.T) {
	s := mustSigner(t, "key")
	got := string(s.sign(nil, []byte("{}"), []byte("{}"), []byte("{}"), []byte("{}")))
	const want = "ca767b02c5bc061ed184a9a029e7f93a7f2f7ed4e8fe74120fc1212f0b008fa3"
	if got != want {
		t.Fatalf("signature %s, want %s", got, want)
	}
}

func TestTamperedAndForged(t *testing.T) {
	s := mustSigner(t, "secret")
	frames, _ := s.Encode(sample())
	tests := []struct {
		name   string
		mutate func([][]byte) [][]byte
		want   error
	}{
		{"content changed", func(f [][]byte) [][]byte { f[7] = []byte(`{"status":"evil"}`); return f }, ErrBadSignature},
		{"header changed", func(f [][]byte) [][]byte {
			f[4] = bytes.Replace(f[4], []byte("execute_reply"), []byte("execute_rEply"), 1)
			return f
		}, ErrBadSignature},
		{"signature missing", func(f [][]byte) [][]byte { f[3] = nil; return f }, ErrMissingSignature},
		{"signature wrong", func(f [][]byte) [][]byte { f[3] = bytes.Repeat([]byte("0"), 64); return f }, ErrBadSignature},
		{"signature short", func(f [][]byte) [][]byte { f[3] = f[3][:10]; return f }, ErrBadSignature},
		{"no delimiter", func(f [][]byte) [][]byte { f[2] = []byte("nope"); return f }, ErrNoDelimiter},
		{"too few frames", func(f [][]byte) [][]byte { return f[:6] }, ErrTooFewFrames},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cp := make([][]byte, len(frames))
			for i := range frames {
				cp[i] = bytes.Clone(frames[i])
			}
			_, err := s.Decode(tt.mutate(cp))
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
	// Signed with another key.
	other := mustSigner(t, "other")
	f2, _ := other.Encode(sample())
	if _, err := s.Decode(f2); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("foreign key: err = %v", err)
	}
}

// TestBigMessageSignature: a message over parallelVerify, whose signature
// is checked beside its parse, is refused as forged whatever its JSON, and
// one signed right decodes whole.
func TestBigMessageSignature(t *testing.T) {
	s := mustSigner(t, "secret")
	m := sample()
	m.Content = json.RawMessage(`{"name":"stdout","text":"` + strings.Repeat("x", parallelVerify) + `\n"}`)
	frames, _ := s.Encode(m)
	got, err := s.Decode(frames)
	if err != nil || !bytes.Equal(got.Content, m.Content) {
		t.Fatalf("a big message signed right: %v", err)
	}
	for name, content := range map[string][]byte{
		"content changed":          bytes.Replace(frames[7], []byte("xx"), []byte("yy"), 1),
		"content changed, invalid": append(bytes.Clone(frames[7][:len(frames[7])-1]), ','),
	} {
		cp := slices.Clone(frames)
		cp[7] = content
		if _, err := s.Decode(cp); !errors.Is(err, ErrBadSignature) {
			t.Errorf("%s: err = %v, want %v", name, err, ErrBadSignature)
		}
	}
	cp := slices.Clone(frames)
	cp[7] = append(bytes.Clone(frames[7][:len(frames[7])-1]), ',')
	cp[3] = s.sign(nil, cp[4], cp[5], cp[6], cp[7])
	if _, err := s.Decode(cp); !errors.Is(err, ErrMalformed) {
		t.Errorf("invalid JSON signed right: err = %v, want %v", err, ErrMalformed)
	}
}

// TestDecodeLazy: a big output read lazily is sent on as signed, to a
// peer with the key, only while it is what was read; its checks wait for
// Verify, which refuses a forged one; a small message or a status is
// decoded at once.
func TestDecodeLazy(t *testing.T) {
	s := mustSigner(t, "secret")
	m := sample()
	m.Header.MsgType = MsgStream
	m.Content = json.RawMessage(`{"name":"stdout","text":"` + strings.Repeat("x", LazyMin) + `\n"}`)
	frames, _ := s.Encode(m)
	got, err := s.DecodeLazy(frames)
	if err != nil || !got.Lazy() || got.Header != m.Header {
		t.Fatalf("DecodeLazy: %v, lazy %v, header %+v", err, err == nil && got.Lazy(), got)
	}
	if err := got.Verify(); err != nil {
		t.Fatalf("Verify of a message signed right: %v", err)
	}
	signed := s.Signed(got)
	if len(signed) != len(frames)-3 || !bytes.Equal(signed[0], frames[3]) || !bytes.Equal(signed[4], frames[7]) {
		t.Fatalf("Signed gives %d frames, not the %d from the signature on", len(signed), len(frames)-3)
	}
	if mustSigner(t, "other").Signed(got) != nil {
		t.Error("Signed under another key")
	}
	changed := *got
	changed.Content = json.RawMessage(`{"name":"stdout","text":"y"}`)
	if s.Signed(&changed) != nil {
		t.Error("Signed gives the frames read for a message whose content was changed")
	}
	if s.Signed(m) != nil {
		t.Error("Signed gives frames for a message built here")
	}

	forged := slices.Clone(frames)
	forged[7] = bytes.Replace(frames[7], []byte("xx"), []byte("yy"), 1)
	got, err = s.DecodeLazy(forged)
	if err != nil {
		t.Fatalf("DecodeLazy of a forged big message: %v (its checks are Verify's)", err)
	}
	if err := got.Verify(); !errors.Is(err, ErrBadSignature) {
		t.Errorf("Verify of a forged message: %v, want %v", err, ErrBadSignature)
	}

	for name, mod := range map[string]func(*Message){
		"small":  func(m *Message) { m.Content = json.RawMessage(`{"name":"stdout","text":"x"}`) },
		"status": func(m *Message) { m.Header.MsgType = MsgStatus },
	} {
		c := *m
		c.rawHeader = nil // encoded afresh
		mod(&c)
		frames, _ := s.Encode(&c)
		forged := slices.Clone(frames)
		forged[3] = bytes.Repeat([]byte("0"), 64)
		if got, err := s.DecodeLazy(frames); err != nil || got.Lazy() {
			t.Errorf("%s: DecodeLazy: %v, lazy %v", name, err, err == nil && got.Lazy())
		}
		if _, err := s.DecodeLazy(forged); !errors.Is(err, ErrBadSignature) {
			t.Errorf("%s, forged: DecodeLazy: %v, want %v", name, err, ErrBadSignature)
		}
	}
}

func TestMalformed(t *testing.T) {
	s := mustSigner(t, "")
	base := func(h, p, m, c string) [][]byte {
		return [][]byte{[]byte(Delimiter), nil, []byte(h), []byte(p), []byte(m), []byte(c)}
	}
	good := `{"msg_id":"1","msg_type":"x","session":"s","username":"u","date":"","version":"5.3"}`
	tests := []struct {
		name   string
		frames [][]byte
	}{
		{"header not json", base(`{`, `{}`, `{}`, `{}`)},
		{"header no type", base(`{"msg_id":"1"}`, `{}`, `{}`, `{}`)},
		{"header wrong types", base(`{"msg_id":1,"msg_type":[]}`, `{}`, `{}`, `{}`)},
		{"content array", base(good, `{}`, `{}`, `[]`)},
		{"content truncated", base(good, `{}`, `{}`, `{"a":`)},
		{"parent string", base(good, `"x"`, `{}`, `{}`)},
		{"metadata empty", base(good, `{}`, ``, `{}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := s.Decode(tt.frames); !errors.Is(err, ErrMalformed) {
				t.Fatalf("err = %v, want ErrMalformed", err)
			}
		})
	}
	if _, err := s.Decode(base(good, `{}`, `{}`, `{}`)); err != nil {
		t.Fatalf("good message rejected: %v", err)
	}
}

func TestLimits(t *testing.T) {
	s, _ := NewSigner("", nil, Limits{MaxFrames: 10, MaxBytes: 1000})
	many := make([][]byte, 11)
	if _, err := s.Decode(many); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("frames: err = %v", err)
	}
	big := [][]byte{[]byte(Delimiter), nil, make([]byte, 1001), nil, nil, nil}
	if _, err := s.Decode(big); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("bytes: err = %v", err)
	}
	if _, err := NewSigner("hmac-md5", nil, Limits{}); err == nil {
		t.Fatal("unsupported scheme accepted")
	}
}

func TestUnsignedMode(t *testing.T) {
	s := mustSigner(t, "")
	frames, _ := s.Encode(sample())
	if len(frames[3]) != 0 {
		t.Fatalf("unsigned mode produced signature %q", frames[3])
	}
	if _, err := s.Decode(frames); err != nil {
		t.Fatal(err)
	}
}

func TestConnectionFile(t *testing.T) {
	ci, err := NewConnectionInfo("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range []int{ci.ShellPort, ci.IOPubPort, ci.StdinPort, ci.ControlPort, ci.HBPort} {
		if seen[p] {
			t.Fatalf("duplicate port %d", p)
		}
		seen[p] = true
	}
	if len(ci.Key) != 64 {
		t.Fatalf("key %q", ci.Key)
	}
	path := filepath.Join(t.TempDir(), "sub", "kernel-1.json")
	if err := WriteConnectionFile(path, ci); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("mode = %v, want 0600", st.Mode().Perm())
	}
	back, err := ReadConnectionFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if *back != *ci {
		t.Fatalf("read back %+v, want %+v", back, ci)
	}
	if got := ci.Addr(ci.ShellPort); !strings.HasPrefix(got, "tcp://127.0.0.1:") {
		t.Fatalf("addr %q", got)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"transport":"tcp","ip":"127.0.0.1","shell_port":70000}`), 0o600)
	if _, err := ReadConnectionFile(bad); err == nil || !strings.Contains(err.Error(), "shell_port") {
		t.Fatalf("bad file: err = %v", err)
	}
	// Port 0: the kernel picks the port (as ipykernel does).
	os.WriteFile(bad, []byte(`{"transport":"tcp","ip":"127.0.0.1","shell_port":5555}`), 0o600)
	picked, err := ReadConnectionFile(bad)
	if err != nil {
		t.Fatalf("file with unassigned ports: %v", err)
	}
	if got := fmt.Sprint(picked.Unassigned()); got != "[iopub stdin control hb]" {
		t.Fatalf("Unassigned = %s", got)
	}
	os.WriteFile(bad, []byte(`{not json`), 0o600)
	if _, err := ReadConnectionFile(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Fatalf("broken file: err = %v", err)
	}
}

func TestIPCConnectionInfo(t *testing.T) {
	ci := NewIPCConnectionInfo("/run/k/kernel")
	if err := ci.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(ci.Unassigned()) != 0 {
		t.Fatalf("Unassigned = %v", ci.Unassigned())
	}
	seen := map[string]bool{}
	for _, ch := range Channels() {
		addr := ci.Addr(ci.Port(ch))
		if !strings.HasPrefix(addr, "ipc:///run/k/kernel-") || seen[addr] {
			t.Fatalf("%s: addr %q (seen %v)", ch, addr, seen)
		}
		seen[addr] = true
	}
	if got := ci.IPCPath(ci.HBPort); got != "/run/k/kernel-5" {
		t.Fatalf("IPCPath = %q", got)
	}
	ci.SetPort(IOPub, 0)
	if ci.IOPubPort != 0 || fmt.Sprint(ci.Unassigned()) != "[iopub]" {
		t.Fatalf("SetPort: %+v", ci)
	}
}

func TestSessionIDsDiffer(t *testing.T) {
	if a, b := NewSessionID(), NewSessionID(); a == b {
		t.Fatal("session ids repeat")
	}
}

func BenchmarkEncodeDecode(b *testing.B) {
	s := mustSigner(b, "secret")
	m := sample()
	b.ReportAllocs()
	for b.Loop() {
		frames, _ := s.Encode(m)
		if _, err := s.Decode(frames); err != nil {
			b.Fatal(err)
		}
	}
}
