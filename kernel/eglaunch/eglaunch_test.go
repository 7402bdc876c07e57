package eglaunch

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"net"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentkernel/agentkernel/kernel/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSplitArgs(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want Options
		rest []string
	}{
		{"deprecated spelling",
			[]string{"--mode", "code", "--RemoteProcessProxy.kernel-id", "k1", "--RemoteProcessProxy.response-address", "10.0.0.1:8877",
				"--RemoteProcessProxy.public-key", "KEY", "--RemoteProcessProxy.port-range", "40000..41000",
				"--RemoteProcessProxy.spark-context-initialization-mode", "none"},
			Options{"k1", "10.0.0.1:8877", "KEY", "40000..41000"}, []string{"--mode", "code"}},
		{"current spelling with =",
			[]string{"--kernel-id=k2", "--response-address=h:1", "--public-key=K", "--port-range=0..0", "--kernel-class-name", "x.Y", "--cluster-type", "none"},
			Options{"k2", "h:1", "K", "0..0"}, nil},
		{"current spelling wins",
			[]string{"--RemoteProcessProxy.kernel-id", "old", "--kernel-id", "new", "--RemoteProcessProxy.public-key", "K"},
			Options{KernelID: "new", PublicKey: "K"}, nil},
		{"empty shell variable: no value",
			[]string{"--port-range", "--response-address", "h:2", "--kernel-id"},
			Options{ResponseAddress: "h:2"}, nil},
		{"backing kernel arguments kept in order",
			[]string{"--HistoryManager.hist_file=:memory:", "--kernel-id", "k", "--matplotlib=inline", "-f", "x.json"},
			Options{KernelID: "k"}, []string{"--HistoryManager.hist_file=:memory:", "--matplotlib=inline", "-f", "x.json"}},
		{"nothing after --",
			[]string{"--kernel-id", "k", "--", "--public-key", "K"},
			Options{KernelID: "k"}, []string{"--", "--public-key", "K"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, rest := SplitArgs(tc.args)
			if got != tc.want {
				t.Errorf("options = %+v, want %+v", got, tc.want)
			}
			if !reflect.DeepEqual(rest, tc.rest) {
				t.Errorf("rest = %q, want %q", rest, tc.rest)
			}
		})
	}
}

func TestFromEnv(t *testing.T) {
	env := map[string]string{"KERNEL_ID": "k", "EG_RESPONSE_ADDRESS": "h:1", "EG_PUBLIC_KEY": "K", "EG_PORT_RANGE": "1..2",
		"EG_MIN_PORT_RANGE_SIZE": "10"}
	got := FromEnv(func(k string) string { return env[k] })
	if want := (Options{"k", "h:1", "K", "1..2"}); got != want {
		t.Fatalf("FromEnv = %+v, want %+v", got, want)
	}
	env["RESPONSE_ADDRESS"], env["PUBLIC_KEY"], env["PORT_RANGE"] = "h:2", "K2", "3..4"
	if got := FromEnv(func(k string) string { return env[k] }); got != (Options{"k", "h:2", "K2", "3..4"}) {
		t.Fatalf("the current names are not preferred: %+v", got)
	}
	if n := MinPortRangeSizeFromEnv(func(k string) string { return env[k] }); n != 10 {
		t.Fatalf("MinPortRangeSizeFromEnv = %d", n)
	}
	if got := (Options{KernelID: "flag"}).Or(Options{KernelID: "env", PublicKey: "K"}); got != (Options{KernelID: "flag", PublicKey: "K"}) {
		t.Fatalf("Or = %+v", got)
	}
}

func TestParsePortRange(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    portRange
		wantErr string
	}{
		{"", portRange{}, ""},
		{"0..0", portRange{}, ""},
		{"5000..5000", portRange{}, ""},
		{"40000..41000", portRange{40000, 41000}, ""},
		{"40000..40999", portRange{}, "at least 1000"},
		{"41000..40000", portRange{}, "LOWER <= UPPER"},
		{"40000-41000", portRange{}, "LOWER..UPPER"},
		{"1..70000", portRange{}, "65535"},
	} {
		got, err := parsePortRange(tc.in, 1000)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: error %v, want one with %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// egKey returns an RSA key pair as EG's ResponseManager makes it (1024
// bits) and its public key as EG substitutes {public_key}: the PEM body.
func egKey(t *testing.T) (*rsa.PrivateKey, string) {
	t.Helper()
	priv, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&priv.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return priv, base64.StdEncoding.EncodeToString(der)
}

func TestParsePublicKey(t *testing.T) {
	priv, body := egKey(t)
	pkcs1 := base64.StdEncoding.EncodeToString(x509.MarshalPKCS1PublicKey(&priv.PublicKey))
	der, _ := base64.StdEncoding.DecodeString(body)
	wrapped := string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ecDER, _ := x509.MarshalPKIXPublicKey(&ec.PublicKey)
	for _, tc := range []struct{ name, key, wantErr string }{
		{"EG's PEM body", body, ""},
		{"a whole PEM block", wrapped, ""},
		{"PKCS #1", pkcs1, ""},
		{"empty", "", "no public key"},
		{"not base64", "not a key!", "not base64"},
		{"not a key", base64.StdEncoding.EncodeToString([]byte("hello")), "not a DER-encoded RSA public key"},
		{"not RSA", base64.StdEncoding.EncodeToString(ecDER), "want RSA"},
		{"broken PEM", "-----BEGIN PUBLIC KEY-----\nxx", "not a PEM block"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pub, err := parsePublicKey(tc.key)
			if tc.wantErr == "" {
				if err != nil || !pub.Equal(&priv.PublicKey) {
					t.Fatalf("parse: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one with %q", err, tc.wantErr)
			}
		})
	}
}

// decrypt is EG's ResponseManager._decode_payload for a version 1 payload.
func decrypt(t *testing.T, data []byte, priv *rsa.PrivateKey) map[string]any {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(string(data))
	if err != nil {
		t.Fatalf("payload not base64: %v", err)
	}
	var p struct {
		Version  *int   `json:"version"`
		Key      string `json:"key"`
		ConnInfo string `json:"conn_info"`
	}
	if err := json.Unmarshal(raw, &p); err != nil || p.Version == nil || *p.Version != 1 {
		t.Fatalf("payload %s: version %v, %v", raw, p.Version, err)
	}
	encKey, _ := base64.StdEncoding.DecodeString(p.Key)
	//lint:ignore SA1019 Enterprise Gateway's launchers encrypt the key with PKCS #1 v1.5: the test decrypts as EG does
	aesKey, err := rsa.DecryptPKCS1v15(nil, priv, encKey)
	if err != nil || len(aesKey) != 16 {
		t.Fatalf("AES key: %d bytes, %v", len(aesKey), err)
	}
	ct, _ := base64.StdEncoding.DecodeString(p.ConnInfo)
	block, _ := aes.NewCipher(aesKey)
	if len(ct) == 0 || len(ct)%16 != 0 {
		t.Fatalf("conn_info is %d bytes", len(ct))
	}
	for i := 0; i < len(ct); i += 16 {
		block.Decrypt(ct[i:i+16], ct[i:i+16])
	}
	n := int(ct[len(ct)-1])
	if n < 1 || n > 16 || !bytes.Equal(ct[len(ct)-n:], bytes.Repeat([]byte{byte(n)}, n)) {
		t.Fatalf("bad padding %x", ct[len(ct)-16:])
	}
	var info map[string]any
	if err := json.Unmarshal(ct[:len(ct)-n], &info); err != nil {
		t.Fatal(err)
	}
	return info
}

// responseAddress listens as EG's response socket and returns the address
// and what the first connection sends, up to its end.
func responseAddress(t *testing.T) (string, <-chan []byte) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := l.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		got <- b
	}()
	t.Cleanup(func() { l.Close(); <-done })
	return l.Addr().String(), got
}

func prepare(t *testing.T, opts Options, cfg Config) *Launch {
	t.Helper()
	if cfg.IP == "" {
		cfg.IP = "127.0.0.1"
	}
	l, err := Prepare(opts, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func TestReplyAsEGDecodesIt(t *testing.T) {
	priv, pub := egKey(t)
	addr, got := responseAddress(t)
	lower := 20000 + int(time.Now().UnixNano()%20000)
	pr := strconv.Itoa(lower) + ".." + strconv.Itoa(lower+1000)
	l := prepare(t, Options{KernelID: "kid-1", ResponseAddress: addr, PublicKey: pub, PortRange: pr}, Config{})
	if err := l.Reply(context.Background()); err != nil {
		t.Fatal(err)
	}
	info := decrypt(t, <-got, priv)
	c := l.ConnectionInfo()
	for k, want := range map[string]any{
		"kernel_id": "kid-1", "key": c.Key, "transport": "tcp", "signature_scheme": "hmac-sha256", "ip": "127.0.0.1",
		"shell_port": float64(c.ShellPort), "iopub_port": float64(c.IOPubPort), "stdin_port": float64(c.StdinPort),
		"control_port": float64(c.ControlPort), "hb_port": float64(c.HBPort), "comm_port": float64(l.CommPort()),
		"pid": float64(syscall.Getpid()),
	} {
		if info[k] != want {
			t.Errorf("%s = %v, want %v", k, info[k], want)
		}
	}
	if _, ok := info["pgid"].(float64); !ok {
		t.Errorf("pgid = %v", info["pgid"])
	}
	if len(c.Key) < 32 {
		t.Errorf("signing key %q is short", c.Key)
	}
	seen := map[int]bool{}
	for _, p := range []int{c.ShellPort, c.IOPubPort, c.StdinPort, c.ControlPort, c.HBPort, l.CommPort()} {
		if p < lower || p > lower+1000 || seen[p] {
			t.Errorf("port %d outside %s or repeated", p, pr)
		}
		seen[p] = true
	}
}

// TestPortsHeld: the five kernel ports stay bound from Prepare until the
// kernel server takes them over, so nothing else can take one between;
// Close closes them when nobody did.
func TestPortsHeld(t *testing.T) {
	_, pub := egKey(t)
	opts := Options{KernelID: "k", ResponseAddress: "127.0.0.1:9", PublicKey: pub}
	free := func(port int) bool {
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err == nil {
			ln.Close()
		}
		return err == nil
	}
	l := prepare(t, opts, Config{})
	c := l.ConnectionInfo()
	for _, ch := range wire.Channels() {
		if free(c.Port(ch)) {
			t.Fatalf("%s port %d is not held", ch, c.Port(ch))
		}
	}
	ls := l.TakeListeners()
	if len(ls) != 5 {
		t.Fatalf("TakeListeners gave %d listeners", len(ls))
	}
	for ch, ln := range ls {
		if got := ln.Addr().(*net.TCPAddr).Port; got != c.Port(ch) {
			t.Errorf("%s listener on %d, connection info says %d", ch, got, c.Port(ch))
		}
		defer ln.Close() // taken: ours to close, not Close's
	}
	if again := l.TakeListeners(); again != nil {
		t.Fatalf("second TakeListeners = %v", again)
	}
	l.Close()
	if free(c.ShellPort) {
		t.Fatal("Close closed a listener that was taken")
	}

	untaken := prepare(t, opts, Config{})
	c = untaken.ConnectionInfo()
	untaken.Close()
	for _, ch := range wire.Channels() {
		if !free(c.Port(ch)) {
			t.Errorf("%s port %d still bound after Close", ch, c.Port(ch))
		}
	}
}

func TestPrepareErrors(t *testing.T) {
	_, pub := egKey(t)
	// A small range whose every port is taken (below Linux's ephemeral
	// ports, so that nothing else takes them meanwhile).
	var first int
	for try := 0; first == 0 && try < 50; try++ {
		base := 20000 + int(time.Now().UnixNano()%10000)
		var taken []net.Listener
		for p := base; p < base+4; p++ {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				break
			}
			taken = append(taken, l)
		}
		for _, l := range taken {
			defer l.Close()
		}
		if len(taken) == 4 {
			first = base
		}
	}
	if first == 0 {
		t.Fatal("found no 4 free adjacent ports")
	}
	full := strconv.Itoa(first) + ".." + strconv.Itoa(first+3)
	ok := Options{KernelID: "k", ResponseAddress: "127.0.0.1:9", PublicKey: pub}
	for _, tc := range []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{"no kernel id", Options{ResponseAddress: "h:1", PublicKey: pub}, "no kernel id"},
		{"address without port", Options{KernelID: "k", ResponseAddress: "10.0.0.1", PublicKey: pub}, `response address "10.0.0.1"`},
		{"address with a bad port", Options{KernelID: "k", ResponseAddress: "h:http", PublicKey: pub}, `response address "h:http"`},
		{"bad key", Options{KernelID: "k", ResponseAddress: "h:1", PublicKey: "AAAA"}, "bad public key"},
		{"bad range", func() Options { o := ok; o.PortRange = "9..x"; return o }(), "port range"},
		{"no free port", func() Options { o := ok; o.PortRange = full; return o }(), "0 free ports, the kernel needs 6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Prepare(tc.opts, Config{IP: "127.0.0.1", MinPortRangeSize: 1})
			if err == nil {
				l.Close()
				t.Fatal("Prepare succeeded")
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %q, want one with %q", err, tc.wantErr)
			}
		})
	}
}

func TestReplyUnreachable(t *testing.T) {
	_, pub := egKey(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nobody listens there now
	launch := prepare(t, Options{KernelID: "k", ResponseAddress: addr, PublicKey: pub}, Config{})
	err = launch.Reply(context.Background())
	if err == nil || !strings.Contains(err.Error(), "response address "+addr) {
		t.Fatalf("Reply = %v, want an error naming %s", err, addr)
	}
}

// send is EG's _send_listener_request: connect, write, close.
func send(t *testing.T, port int, data string) error {
	t.Helper()
	c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Write([]byte(data))
	return err
}

func TestCommPort(t *testing.T) {
	_, pub := egKey(t)
	l := prepare(t, Options{KernelID: "k", ResponseAddress: "127.0.0.1:9", PublicKey: pub}, Config{Timeout: time.Second})
	events := make(chan string, 16)
	l.Listen(Handler{
		Signal:   func(s syscall.Signal) { events <- "signal " + strconv.Itoa(int(s)) },
		Shutdown: func() { events <- "shutdown" },
	})
	port := l.CommPort()
	for _, req := range []string{
		`{"signum": 2}`,
		`{"signum": 0}`,             // liveness: nothing to do
		`not json`,                  // dropped, still serving
		`{"signum": "x"}`,           // dropped
		`{"signum": 99}`,            // dropped
		strings.Repeat("x", 70<<10), // too large: dropped
		`{"signum": "15"}`,
		`{"signum": 2, "shutdown": 1}`,
		`{"shutdown": 0}`,
		`{"shutdown": true}`,
	} {
		if err := send(t, port, req); err != nil {
			t.Fatalf("send %.20q: %v", req, err)
		}
	}
	// A peer that connects and sends nothing does not stop the port for
	// longer than the timeout.
	idle, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	if err := send(t, port, `{"signum": 10}`); err != nil {
		t.Fatal(err)
	}
	want := []string{"signal 2", "signal 15", "signal 2", "shutdown", "shutdown", "signal 10"}
	for i, w := range want {
		select {
		case got := <-events:
			if got != w {
				t.Fatalf("event %d = %q, want %q (all: %q)", i, got, w, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("event %d (%q) never came", i, w)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != net.ErrClosed {
		t.Fatalf("second Close = %v, want net.ErrClosed", err)
	}
	if err := send(t, port, `{"signum": 0}`); err == nil {
		t.Fatal("the communication port still accepts after Close")
	}
	select {
	case e := <-events:
		t.Fatalf("unexpected event %q", e)
	default:
	}
}

// BenchmarkReply: the connection info encrypted and sent to a response
// address on loopback (what a launch adds before EG can connect).
func BenchmarkReply(b *testing.B) {
	priv, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		b.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(&priv.PublicKey)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			io.Copy(io.Discard, c)
			c.Close()
		}
	}()
	defer func() { l.Close(); <-done }()
	launch, err := Prepare(Options{KernelID: "k", ResponseAddress: l.Addr().String(),
		PublicKey: base64.StdEncoding.EncodeToString(der)}, Config{IP: "127.0.0.1"})
	if err != nil {
		b.Fatal(err)
	}
	defer launch.Close()
	for b.Loop() {
		if err := launch.Reply(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLivenessPoll: EG's {"signum": 0} on the communication port, from
// connect to the port taking the next connection.
func BenchmarkLivenessPoll(b *testing.B) {
	priv, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		b.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(&priv.PublicKey)
	launch, err := Prepare(Options{KernelID: "k", ResponseAddress: "127.0.0.1:9",
		PublicKey: base64.StdEncoding.EncodeToString(der)}, Config{IP: "127.0.0.1"})
	if err != nil {
		b.Fatal(err)
	}
	defer launch.Close()
	polled := make(chan struct{})
	launch.Listen(Handler{Signal: func(syscall.Signal) { close(polled) }})
	addr := "127.0.0.1:" + strconv.Itoa(launch.CommPort())
	poll := func(req string) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		c.Write([]byte(req))
		c.Close()
	}
	for b.Loop() {
		poll(`{"signum": 0}`)
	}
	// The port read every poll: a signal after them arrives.
	poll(`{"signum": 10}`)
	<-polled
}
