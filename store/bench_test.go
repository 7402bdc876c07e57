package store

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentkernel/agentkernel/internal/pgtest"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/rewind"
)

// Benchmarks. Run with, for example:
//
//	go test -run '^$' -bench . -benchtime 300x ./store/
//
// The 1,000,000-message search fixture is built once and kept in
// $TMPDIR/agentkernel-bench-search-v2.db (delete it to rebuild). The second,
// PostgreSQL run of the suite (see TestMain) runs every benchmark again on
// PostgreSQL, as a user of the store (row-level security on); its search
// fixture is built in the schema bench_search_v2 of the test server (a
// throwaway cluster unless $AGENTKERNEL_TEST_POSTGRES).

// BenchmarkAppend measures one durable AppendUI (committed on return) and
// reports the median and 99th percentile.
func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	s := newStore(b)
	id := newSession(b, s)
	var clock messages.Clock
	text := "The dataframe has 3 columns and 1,204 rows; plotting revenue by month next."
	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m := say(clock.Next(), messages.SayText, text)
		t0 := time.Now()
		if err := s.AppendUI(ctx, id, m); err != nil {
			b.Fatal(err)
		}
		durs = append(durs, time.Since(t0))
	}
	b.StopTimer()
	reportPercentiles(b, durs)
}

// BenchmarkAppendConcurrent20 runs 20 writers at once, each a Store of its
// own (as 20 kernels are) appending to a session of its own, and reports
// the appends per second they reach together and the latency of each.
func BenchmarkAppendConcurrent20(b *testing.B) {
	ctx := context.Background()
	const writers = 20
	first := newStore(b)
	o := reopen(first)
	stores := []*Store{first}
	for len(stores) < writers {
		s, err := Open(context.Background(), o)
		must(b, err)
		b.Cleanup(func() { s.Close() })
		stores = append(stores, s)
	}
	ids := make([]string, writers)
	for i, s := range stores {
		ids[i] = newSession(b, s)
	}
	text := "The dataframe has 3 columns and 1,204 rows; plotting revenue by month next."
	per := max(b.N/writers, 1)
	durs := make([][]time.Duration, writers)
	errs := make(chan error, writers)
	b.ResetTimer()
	t0 := time.Now()
	for w := range writers {
		go func() {
			var clock messages.Clock
			for i := 0; i < per; i++ {
				m := say(clock.Next(), messages.SayText, text)
				t := time.Now()
				if err := stores[w].AppendUI(ctx, ids[w], m); err != nil {
					errs <- err
					return
				}
				durs[w] = append(durs[w], time.Since(t))
			}
			errs <- nil
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	elapsed := time.Since(t0)
	b.StopTimer()
	b.ReportMetric(float64(per*writers)/elapsed.Seconds(), "appends/s")
	reportPercentiles(b, slices.Concat(durs...))
}

// BenchmarkAppendRLS measures what row-level security costs an append on
// PostgreSQL (so it runs in the suite's PostgreSQL run only). Two stores on
// the same tables append the same messages, taking turns (each iteration
// both, the first of them alternating): a user of the store, held to the
// policies (testRole), and a role they do not hold (BYPASSRLS, with the
// same grants), each to a session of its own. For each it reports the p50
// and p90 of the server's time per append — the planning and execution
// of the append's statements, from pg_stat_statements, read after each
// append — and of the caller's time on loopback, and the policies' ratio
// (rls/none, 1.10 is +10%). pg_stat_statements times the planner and the
// executor's run, not the executor's start and end (where the policies'
// subplans are set up, those never run included) nor Bind; the caller's
// time has those too, and the network and commit both roles pay. Cases: ui, one message of the model's (one
// statement); ui-batch, three (a transaction); api, one API message (a
// transaction). Without pg_stat_statements (a server of
// $AGENTKERNEL_TEST_POSTGRES that does not load it) only the caller's
// times are reported. Run:
//
//	go test -run '^$' -bench AppendRLS -benchtime 2000x ./store/
func BenchmarkAppendRLS(b *testing.B) {
	onlyPostgres(b)
	ctx := context.Background()
	admin := pgAdminSchema(b)
	held, err := Open(ctx, Options{URL: pgUserURL(b, admin, testRole)})
	must(b, err)
	b.Cleanup(func() { held.Close() })
	free := openBypassing(b, admin, "ak_bench_bypass")
	text := "The dataframe has 3 columns and 1,204 rows; plotting revenue by month next."
	// Tables as a store in use has them: sessions of both roles, each with
	// messages, and statistics, so that the plans are those of such a store.
	for _, s := range []*Store{held, free} {
		for i := range 200 {
			id := newSession(b, s)
			must(b, s.AppendUI(ctx, id, say(int64(i+1), messages.SayText, text), say(int64(i+2), messages.SayText, text)))
		}
	}
	superExec(b, held.opts.URL, "ANALYZE sessions, ui_messages, api_messages, ak_owners")
	srv := newServerClock(b)
	for _, tc := range []struct {
		name   string
		append func(s *Store, id string, c *messages.Clock) error
	}{
		{"ui", func(s *Store, id string, c *messages.Clock) error {
			return s.AppendUI(ctx, id, say(c.Next(), messages.SayText, text))
		}},
		{"ui-batch", func(s *Store, id string, c *messages.Clock) error {
			return s.AppendUI(ctx, id, say(c.Next(), messages.SayText, text), ask(c.Next(), messages.AskCommand, "ls -la"),
				say(c.Next(), messages.SayCommandOutput, text))
		}},
		{"api", func(s *Store, id string, c *messages.Clock) error {
			return s.AppendAPI(ctx, id, assistantText(c.Next(), text))
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			sides := []*rlsSide{{name: "rls", s: held, role: testRole}, {name: "none", s: free, role: "ak_bench_bypass"}}
			for _, sd := range sides {
				sd.id = newSession(b, sd.s)
				must(b, sd.s.AppendUI(ctx, sd.id, say(sd.clock.Next(), messages.SayText, text)))
				for range 20 { // the first append's long way, the statement and plan caches
					must(b, tc.append(sd.s, sd.id, &sd.clock))
				}
			}
			for i := 0; b.Loop(); i++ {
				for j := range sides {
					sd := sides[(i+j)%2]
					before := srv.spent(b, sd.role)
					t0 := time.Now()
					if err := tc.append(sd.s, sd.id, &sd.clock); err != nil {
						b.Fatal(err)
					}
					sd.client = append(sd.client, time.Since(t0))
					if srv != nil {
						sd.server = append(sd.server, srv.spent(b, sd.role)-before)
					}
				}
			}
			reportRLS(b, sides)
		})
	}
}

// rlsSide is one role's half of BenchmarkAppendRLS: its store, session,
// clock, and each append's times.
type rlsSide struct {
	name, role     string
	s              *Store
	id             string
	clock          messages.Clock
	client, server []time.Duration
}

// reportRLS reports the p50 and p90 of both sides' server and caller times
// and the ratio of the first side's to the second's, and logs them as a table.
func reportRLS(b *testing.B, sides []*rlsSide) {
	pct := func(d []time.Duration, p int) time.Duration {
		if len(d) == 0 {
			return 0
		}
		d = slices.Clone(d)
		slices.Sort(d)
		return d[len(d)*p/100]
	}
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	var table strings.Builder
	fmt.Fprintf(&table, "%d appends each\n%-7s %-8s %9s %9s\n", len(sides[0].client), "time", "role", "p50 µs", "p90 µs")
	for _, what := range []string{"server", "client"} {
		var p [2][2]time.Duration
		for i, sd := range sides {
			d := sd.server
			if what == "client" {
				d = sd.client
			}
			if len(d) == 0 {
				continue
			}
			p[i] = [2]time.Duration{pct(d, 50), pct(d, 90)}
			b.ReportMetric(us(p[i][0]), what+"-"+sd.name+"-p50-µs")
			b.ReportMetric(us(p[i][1]), what+"-"+sd.name+"-p90-µs")
			fmt.Fprintf(&table, "%-7s %-8s %9.0f %9.0f\n", what, sd.name, us(p[i][0]), us(p[i][1]))
		}
		if p[1][0] > 0 && p[1][1] > 0 {
			r50, r90 := float64(p[0][0])/float64(p[1][0]), float64(p[0][1])/float64(p[1][1])
			b.ReportMetric(r50, what+"-ratio-p50")
			b.ReportMetric(r90, what+"-ratio-p90")
			fmt.Fprintf(&table, "%-7s %-8s %9.2f %9.2f\n", what, "ratio", r50, r90)
		}
	}
	b.Log("\n" + table.String())
}

// openBypassing opens the store at adminURL's schema as the login role
// name, a member of UserRole made BYPASSRLS: the same grants as a user,
// none of the policies. Open refuses such a role (pgCheck), so this opens
// it as Open does but for that check.
func openBypassing(b *testing.B, adminURL, name string) *Store {
	b.Helper()
	ctx := context.Background()
	u := pgUserURL(b, adminURL, name)
	must(b, pg.Exec(ctx, "ALTER ROLE "+name+" BYPASSRLS"))
	o, err := Options{URL: u}.withDefaults()
	must(b, err)
	s := &Store{path: RedactURL(u), opts: o, log: o.Logger.Named("store"), done: make(chan struct{}),
		smallSession: smallSession, pg: true, user: name}
	s.w, s.pool, err = pgConnect(ctx, o)
	must(b, err)
	s.r = s.w
	s.start()
	b.Cleanup(func() { s.Close() })
	return s
}

// serverClock reads how long the server spent on a role's statements, in
// total, from pg_stat_statements; nil when the server does not load it.
type serverClock struct{ c *pgx.Conn }

func newServerClock(b *testing.B) *serverClock {
	b.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, pg.URL)
	must(b, err)
	b.Cleanup(func() { c.Close(ctx) })
	if _, err := c.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements SCHEMA public"); err == nil {
		_, err = c.Exec(ctx, "SELECT FROM public.pg_stat_statements LIMIT 1")
		if err == nil {
			return &serverClock{c}
		}
		b.Logf("no server times: %v", err)
	}
	return nil
}

// spent is the server's time on role's statements so far (planning and
// execution); 0 for a nil clock.
func (sc *serverClock) spent(b *testing.B, role string) time.Duration {
	if sc == nil {
		return 0
	}
	var ms float64
	if err := sc.c.QueryRow(context.Background(), `SELECT coalesce(sum(total_plan_time + total_exec_time), 0)
		FROM public.pg_stat_statements WHERE userid = to_regrole($1)`, role).Scan(&ms); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ms * 1e6)
}

func reportPercentiles(b *testing.B, durs []time.Duration) {
	slices.Sort(durs)
	if len(durs) == 0 {
		return
	}
	b.ReportMetric(float64(durs[len(durs)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(durs[len(durs)*99/100].Microseconds()), "p99-µs")
}

var benchWords = func() []string {
	base := strings.Fields(`the a of to and in is it for on with as this that data frame plot
		column row kernel python error value list file read write import pandas numpy model agent
		cell output run test fix bug function class method return string number array index query
		table chart revenue month region sales customer order price total mean median sum count`)
	rng := rand.New(rand.NewPCG(1, 2))
	for len(base) < 5000 {
		n := 4 + rng.IntN(6)
		w := make([]byte, n)
		for i := range w {
			w[i] = byte('a' + rng.IntN(26))
		}
		base = append(base, string(w))
	}
	return base
}()

// benchText is a sentence of n words drawn with a Zipf-like skew.
func benchText(rng *rand.Rand, n int) string {
	var sb strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			sb.WriteByte(' ')
		}
		// Squaring a uniform variable favours the first words.
		f := rng.Float64()
		sb.WriteString(benchWords[int(f*f*float64(len(benchWords)))])
	}
	return sb.String()
}

// BenchmarkApplyRewind100k rewinds a 100,000-message session (100,000 UI
// and 100,000 API messages, with a condense in the middle and tool calls)
// by its last turn and applies it: package rewind on the histories in
// memory, then ApplyRewind. The _load variant also loads both histories
// from the store first (Store.Rewind).
func BenchmarkApplyRewind100k(b *testing.B) {
	ctx := context.Background()
	s := newStore(b)
	id := newSession(b, s)
	h := rewindBenchHistories(100_000)
	for i := 0; i < len(h.UI); i += 10_000 {
		must(b, s.AppendUI(ctx, id, h.UI[i:min(i+10_000, len(h.UI))]...))
	}
	for i := 0; i < len(h.API); i += 10_000 {
		must(b, s.AppendAPI(ctx, id, h.API[i:min(i+10_000, len(h.API))]...))
	}
	b.Run("in-memory", func(b *testing.B) {
		durs := make([]time.Duration, 0, b.N)
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			target := h.UI[len(h.UI)-4].TS // the last turn: user feedback + 3 answers
			res, err := rewind.RewindToTimestamp(h.UI, h.API, target, rewind.Options{})
			if err != nil {
				b.Fatal(err)
			}
			if err := s.ApplyRewind(ctx, id, h, res); err != nil {
				b.Fatal(err)
			}
			durs = append(durs, time.Since(t0))
			h = Histories{UI: res.UI, API: res.API}
		}
		reportPercentiles(b, durs)
		b.ReportMetric(float64(len(h.UI)), "ui-msgs")
	})
	b.Run("load", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			n, err := s.Count(ctx, id)
			must(b, err)
			last, err := s.LoadUI(ctx, id, Page{Offset: n.UI - 4, Limit: 1})
			must(b, err)
			if _, err := s.Rewind(ctx, id, last[0].TS, rewind.Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// rewindBenchHistories builds n UI and n API messages in turns of four:
// user feedback, assistant text with a tool_use, the tool result, and an
// answer; the first half is condensed into a summary.
func rewindBenchHistories(n int) Histories {
	rng := rand.New(rand.NewPCG(3, 4))
	var h Histories
	ts := int64(1_700_000_000_000)
	for i := 0; len(h.UI) < n; i++ {
		ts++
		text := benchText(rng, 12)
		switch i % 4 {
		case 0:
			k := messages.SayUserFeedback
			if i == 0 {
				k = messages.SayText
			}
			h.UI = append(h.UI, say(ts, k, text))
			h.API = append(h.API, userText(ts, text))
		case 1:
			h.UI = append(h.UI, ask(ts, messages.AskCommand, "ls -la"))
			h.API = append(h.API, toolUse(ts, fmt.Sprintf("t%d", len(h.API))))
		case 2:
			h.UI = append(h.UI, say(ts, messages.SayCommandOutput, text))
			h.API = append(h.API, toolResult(ts, fmt.Sprintf("t%d", len(h.API)-1), text))
		case 3:
			h.UI = append(h.UI, say(ts, messages.SayText, text))
			h.API = append(h.API, assistantText(ts, text))
		}
		if len(h.UI) == n/2 { // a condense of everything so far
			ts++
			cc := say(ts, messages.SayCondenseContext, "")
			cc.ContextCondense = &messages.ContextCondense{CondenseID: "c1", Summary: "summary"}
			for j := range h.API {
				h.API[j].CondenseParent = "c1"
			}
			h.UI = append(h.UI, cc)
			h.API = append(h.API, messages.APIMessage{Role: messages.RoleUser, TS: ts, IsSummary: true, CondenseID: "c1",
				Content: []messages.ContentBlock{{Type: messages.BlockText, Text: "summary"}}})
			i = 3 // the next message starts a turn with user feedback
		}
	}
	return h
}

// searchFixture returns a store with 1,000 sessions of 1,000 UI messages
// each, built once and kept in the temp directory.
func searchFixture(b *testing.B) (*Store, []string) {
	b.Helper()
	const sessions, perSession = 1000, 1000
	path := filepath.Join(os.TempDir(), "agentkernel-bench-search-v2.db")
	ctx := context.Background()
	o := Options{Path: path}
	built := func() bool { _, err := os.Stat(path + ".done"); return err == nil }
	if pg != nil {
		must(b, pg.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS bench_search_v2"))
		admin := pgtest.WithParam(pg.URL, "search_path", "bench_search_v2")
		_, err := Init(ctx, InitOptions{AdminURL: admin})
		must(b, err)
		o = Options{URL: pgUserURL(b, admin, testRole)}
		built = func() bool { return pg.Exec(ctx, "SELECT FROM bench_search_v2.built") == nil }
	}
	if !built() {
		if pg == nil {
			for _, suffix := range []string{"", "-wal", "-shm"} {
				os.Remove(path + suffix)
			}
		}
		s, err := Open(context.Background(), o)
		must(b, err)
		rng := rand.New(rand.NewPCG(5, 6))
		t0 := time.Now()
		ts := int64(1_700_000_000_000)
		for i := 0; i < sessions; i++ {
			id := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
			_, err := s.CreateSession(ctx, NewSession{ID: id})
			must(b, err)
			ms := make([]messages.UIMessage, perSession)
			for j := range ms {
				ts++
				ms[j] = say(ts, messages.SayText, benchText(rng, 8+rng.IntN(24)))
			}
			must(b, s.AppendUI(ctx, id, ms...))
		}
		if pg != nil {
			superExec(b, o.URL, "VACUUM ANALYZE")
			superExec(b, o.URL, "CREATE TABLE built ()")
		} else {
			_, err = s.w.Exec("INSERT INTO ui_fts(ui_fts) VALUES('optimize')")
		}
		must(b, err)
		must(b, s.Close())
		if pg == nil {
			must(b, os.WriteFile(path+".done", nil, 0o600))
		}
		b.Logf("built %d-message fixture in %v", sessions*perSession, time.Since(t0))
	}
	s, err := Open(context.Background(), o)
	must(b, err)
	b.Cleanup(func() { s.Close() })
	ids := []string{"00000000-0000-4000-8000-000000000999", "00000000-0000-4000-8000-000000000001"}
	return s, ids
}

// BenchmarkSearch1M runs full-text searches over 1,000,000 stored messages.
func BenchmarkSearch1M(b *testing.B) {
	ctx := context.Background()
	s, ids := searchFixture(b)
	c, err := s.Count(ctx, "")
	must(b, err)
	if c.UI != 1_000_000 {
		b.Fatalf("fixture has %d messages", c.UI)
	}
	common, mid, rare := benchWords[3], benchWords[400], benchWords[4900]
	cases := []struct {
		name, q string
		o       SearchOptions
	}{
		{"common-word", common, SearchOptions{}},
		{"mid-word", mid, SearchOptions{}},
		{"rare-word", rare, SearchOptions{}},
		{"two-words", mid + " " + common, SearchOptions{}},
		{"absent", "zzzzzzzzzz", SearchOptions{}},
		{"session-newest/mid-word", mid, SearchOptions{SessionID: ids[0]}},
		{"session-oldest/mid-word", mid, SearchOptions{SessionID: ids[1]}},
		{"session-oldest/common-word", common, SearchOptions{SessionID: ids[1]}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			durs := make([]time.Duration, 0, b.N)
			var hits int
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				h, err := s.Search(ctx, tc.q, tc.o)
				if err != nil {
					b.Fatal(err)
				}
				durs = append(durs, time.Since(t0))
				hits = len(h)
			}
			reportPercentiles(b, durs)
			b.ReportMetric(float64(hits), "hits")
		})
	}
}

// BenchmarkList10k lists 10,000 sessions with titles and previews.
func BenchmarkList10k(b *testing.B) {
	ctx := context.Background()
	s := newStore(b)
	rng := rand.New(rand.NewPCG(7, 8))
	ts := int64(1_700_000_000_000)
	for i := 0; i < 10_000; i++ {
		ss, err := s.CreateSession(ctx, NewSession{})
		must(b, err)
		ts += 3
		args, _ := json.Marshal(map[string]string{"tool": "readFile", "path": "src/file.go"})
		must(b, s.AppendUI(ctx, ss.ID, say(ts, messages.SayText, benchText(rng, 25)),
			ask(ts+1, messages.AskTool, string(args)), say(ts+2, messages.SayText, benchText(rng, 40))))
	}
	for _, tc := range []struct {
		name string
		o    ListOptions
	}{
		{"all", ListOptions{Limit: -1}},
		{"search", ListOptions{Limit: -1, Search: benchWords[50]}},
		{"first-50", ListOptions{}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			durs := make([]time.Duration, 0, b.N)
			var n int
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				list, err := s.ListSessions(ctx, tc.o)
				if err != nil {
					b.Fatal(err)
				}
				durs = append(durs, time.Since(t0))
				n = len(list)
				if n > 0 && (list[0].Title == "" || list[0].LastMessage == "") {
					b.Fatalf("no title or preview: %+v", list[0])
				}
			}
			reportPercentiles(b, durs)
			b.ReportMetric(float64(n), "sessions")
		})
	}
}

// pageFixture is a store with one session of n UI messages (the turns of
// rewindBenchHistories: user feedback, a command, its output, an answer),
// appended in batches.
func pageFixture(b *testing.B, n int) (*Store, string, []messages.UIMessage) {
	b.Helper()
	ctx := context.Background()
	s := newStore(b)
	id := newSession(b, s)
	ui := rewindBenchHistories(n).UI
	t0 := time.Now()
	for i := 0; i < len(ui); i += 10_000 {
		must(b, s.AppendUI(ctx, id, ui[i:min(i+10_000, len(ui))]...))
	}
	b.Logf("appended %d UI messages in %v", len(ui), time.Since(t0))
	return s, id, ui
}

// reportMS reports the median of durs in milliseconds.
func reportMS(b *testing.B, durs []time.Duration) {
	slices.Sort(durs)
	if len(durs) == 0 {
		return
	}
	b.ReportMetric(float64(durs[len(durs)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(durs[len(durs)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkPageLast50Of100k reads the last page of a 100,000-message
// session, as `agentkernel sessions show ID --last 50` does: PageUI with
// Last 50. The target is 5 ms at the median on SQLite.
func BenchmarkPageLast50Of100k(b *testing.B) {
	ctx := context.Background()
	s, id, ui := pageFixture(b, 100_000)
	var durs []time.Duration
	for b.Loop() {
		t0 := time.Now()
		page, err := s.PageUI(ctx, id, UIPage{Last: 50})
		durs = append(durs, time.Since(t0))
		if err != nil {
			b.Fatal(err)
		}
		if len(page) != 50 || page[49].TS != ui[len(ui)-1].TS {
			b.Fatalf("page of %d messages, ending at %d", len(page), page[len(page)-1].TS)
		}
	}
	reportMS(b, durs)
}

// BenchmarkPage100k is the other reads of a paging view of a
// 100,000-message session: a role's last page, a page from the middle,
// the counts, and the places (#N) of the last page's messages.
func BenchmarkPage100k(b *testing.B) {
	ctx := context.Background()
	s, id, ui := pageFixture(b, 100_000)
	last := ui[len(ui)-50:]
	for _, tc := range []struct {
		name string
		read func() error
	}{
		{"user-last50", func() error {
			p, err := s.PageUI(ctx, id, UIPage{Last: 50, Role: "user"})
			if err == nil && len(p) != 50 {
				err = fmt.Errorf("%d messages", len(p))
			}
			return err
		}},
		{"middle-last50", func() error {
			p, err := s.PageUI(ctx, id, UIPage{Last: 50, Before: ui[len(ui)/2].TS})
			if err == nil && len(p) != 50 {
				err = fmt.Errorf("%d messages", len(p))
			}
			return err
		}},
		{"count", func() error { _, err := s.CountUI(ctx, id, ""); return err }},
		{"count-user", func() error { _, err := s.CountUI(ctx, id, "user"); return err }},
		{"indexes-last50", func() error {
			idx, err := s.UIIndexes(ctx, id, tsOf(last))
			if err == nil && idx[0] != len(ui)-50 {
				err = fmt.Errorf("index %d", idx[0])
			}
			return err
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var durs []time.Duration
			for b.Loop() {
				t0 := time.Now()
				err := tc.read()
				durs = append(durs, time.Since(t0))
				if err != nil {
					b.Fatal(err)
				}
			}
			reportMS(b, durs)
		})
	}
}

// BenchmarkWorld measures what a checkpoint costs the store: storing new
// file contents (PutBlob of 4 KiB), finding stored ones (HasBlob, what a
// rescan of an unchanged file asks), and loading a workspace's index of
// 2,000 files (what a kernel does at its first code run).
func BenchmarkWorld(b *testing.B) {
	ctx := context.Background()
	s := newStore(b)
	data := make([]byte, 4096)
	rng := rand.New(rand.NewPCG(9, 10))
	fill := func() {
		for i := range data {
			data[i] = byte(rng.IntN(256))
		}
	}
	var stored []string
	for range 200 {
		fill()
		h, err := s.PutBlob(ctx, data)
		must(b, err)
		stored = append(stored, h)
	}
	idx := make([]FileStat, 2000)
	for i := range idx {
		idx[i] = FileStat{Path: fmt.Sprintf("src/pkg%d/file%d.py", i%50, i), Size: 4096, MTime: int64(i), CTime: int64(i), Inode: int64(i), Hash: stored[i%len(stored)]}
	}
	must(b, s.SaveIndex(ctx, "/home/jovyan", idx, nil))
	for _, tc := range []struct {
		name string
		op   func(i int) error
	}{
		{"put-new-4k", func(int) error { fill(); _, err := s.PutBlob(ctx, data); return err }},
		{"has-stored", func(i int) error {
			ok, err := s.HasBlob(ctx, stored[i%len(stored)])
			if err == nil && !ok {
				err = fmt.Errorf("blob %s not found", stored[i%len(stored)])
			}
			return err
		}},
		{"load-index-2000", func(int) error {
			got, err := s.LoadIndex(ctx, "/home/jovyan")
			if err == nil && len(got) != len(idx) {
				err = fmt.Errorf("%d index entries", len(got))
			}
			return err
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var durs []time.Duration
			for i := 0; b.Loop(); i++ {
				t0 := time.Now()
				if err := tc.op(i); err != nil {
					b.Fatal(err)
				}
				durs = append(durs, time.Since(t0))
			}
			reportPercentiles(b, durs)
		})
	}
}
