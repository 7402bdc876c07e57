package session

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/agent/provider/openai"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/store"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// crashChildEnv makes the test binary run crashChild instead of the tests;
// its value is the store's directory.
const crashChildEnv = "AGENTKERNEL_SESSION_CRASH_CHILD"

// crashPieces is the answer the child's model streams before it stalls.
var crashPieces = func() []string {
	p := make([]string, 300)
	for i := range p {
		p[i] = fmt.Sprintf("w%d ", i)
	}
	return p
}()

// crashChild asks a question in a new session and prints "streaming ID"
// once the model has streamed every piece of its answer (it then stalls,
// mid-answer) and the store's debounced writes have stored it; the parent
// kills it.
func crashChild() int {
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Dir: os.Getenv(crashChildEnv), Debounce: 20 * time.Millisecond})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	srv := scripted.New(nil)
	srv.Enqueue(scripted.Reply(scripted.Text(crashPieces...), scripted.Stall()))
	h := New(Config{Store: st, Workspace: os.TempDir(), Runner: &fakeRunner{}, Model: "openai:m",
		OpenModel: func(string) (provider.Provider, error) {
			return openai.New(openai.Config{APIKey: "k", BaseURL: srv.OpenAIURL(), Model: "m"})
		}})
	if _, err := h.StartPrompt(ctx, agent.Prompt{Text: "Write the report"}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	info, err := h.Current(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	// Wait (no timing: polling) until the debounced writes have stored
	// the whole answer so far, still partial.
	want := strings.Join(crashPieces, "")
	for {
		ui, err := st.LoadUI(ctx, info.ID, store.Page{})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		if n := len(ui); n > 0 && ui[n-1].Say == messages.SayText && ui[n-1].Partial && ui[n-1].Text == want {
			break
		}
		time.Sleep(time.Millisecond)
	}
	fmt.Printf("streaming %s\n", info.ID)
	select {} // killed here, mid-answer
}

// TestSIGKILLMidStream: a kernel killed (SIGKILL) while the model streams
// keeps the prompt in both histories and every completed message, and the
// answer as far as the store's debounced writes got (the chunks are
// coalesced: the store's own tests count the writes), marked partial;
// resumed in a new host, the session offers to go on, and an empty prompt
// resumes the turn from its history.
func TestSIGKILLMidStream(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a child process")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	id := ""
	for id == "" && sc.Scan() {
		id, _ = strings.CutPrefix(sc.Text(), "streaming ")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if id == "" {
		t.Fatalf("the child never streamed: %s", stderr.String())
	}

	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.IntegrityCheck(ctx); err != nil {
		t.Fatal(err)
	}
	ui, err := st.LoadUI(ctx, id, store.Page{})
	if err != nil {
		t.Fatal(err)
	}
	var prompt, started bool
	var answer *messages.UIMessage
	for i, m := range ui {
		switch {
		case m.Say == messages.SayText && m.Text == "Write the report":
			prompt = true
		case m.Say == messages.SayAPIReqStarted:
			started = true
		case m.Say == messages.SayText:
			answer = &ui[i]
		}
	}
	want := strings.Join(crashPieces, "")
	if !prompt || !started || answer == nil || !answer.Partial || answer.Text != want {
		t.Fatalf("after the kill: prompt %v, api_req_started %v, answer %+v", prompt, started, answer)
	}
	api, err := st.LoadAPI(ctx, id, store.Page{})
	if err != nil || len(api) != 1 || api[0].Role != messages.RoleUser || !strings.Contains(api[0].PlainText(), "Write the report") {
		t.Fatalf("API history after the kill: %+v %v", api, err)
	}

	srv, open := scriptedModels(t)
	h := newHost(t, Config{Store: st, Model: "openai:m", OpenModel: open})
	info, err := h.Resume(ctx, id)
	if err != nil || !info.Interrupted {
		t.Fatalf("resume: %+v %v", info, err)
	}
	srv.Enqueue(scripted.Reply(scripted.Text("The report, finished.")))
	res, err := h.Submit(ctx, "", Follow{Approve: agent.ApproveAll.Approver()})
	if err != nil || res.Text != "The report, finished." {
		t.Fatalf("resuming: %q %v", res.Text, err)
	}
	msgs := srv.Requests()[0].Messages()
	if last := msgs[len(msgs)-1]; last["role"] != "user" || !strings.Contains(fmt.Sprint(last["content"]), "Write the report") {
		t.Errorf("the resumed request did not go on from the prompt: %v", last)
	}
}
