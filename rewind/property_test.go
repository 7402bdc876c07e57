package rewind

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/agentkernel/agentkernel/messages"
)

var (
	propSeed = flag.Uint64("rewind.seed", 0, "seed of TestRewindProperties (default: $REWIND_SEED, else 1)")
	propN    = flag.Int("rewind.n", 10000, "number of random histories TestRewindProperties plays")
)

func propertySeed(t *testing.T) uint64 {
	if *propSeed != 0 {
		return *propSeed
	}
	if s := os.Getenv("REWIND_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("REWIND_SEED=%q: %v", s, err)
		}
		return v
	}
	return 1
}

// TestRewindProperties plays -rewind.n random sessions (default 10,000),
// rewinding at random points with random options and carrying on from the
// result, and checks after every rewind that:
//   - Effective(API) has no tool_use without its tool_result (and no
//     tool_result without its tool_use);
//   - no summary or truncation marker remains whose condense_context /
//     sliding_window_truncation message is gone (and the converse);
//   - rewinding to the end is a no-op (Changed false), before and after;
//   - without SkipCleanup, no dangling condenseParent/truncationParent and no
//     orphaned tool block remains in the raw API history;
//   - the inputs are unchanged, the UI result is the prefix, the API result
//     a subsequence, every message still validates, and Changed is true
//     exactly when the result differs from the input;
//   - RewindToIndex and RewindToTimestamp agree.
//
// Reproduce a failure with -rewind.seed=N (or REWIND_SEED=N).
func TestRewindProperties(t *testing.T) {
	seed := propertySeed(t)
	t.Logf("seed %d, %d histories", seed, *propN)
	const chunks = 4
	var rewinds, changed atomic.Int64
	t.Run("chunks", func(t *testing.T) {
		for c := range chunks {
			t.Run(strconv.Itoa(c), func(t *testing.T) {
				t.Parallel()
				r, ch := playSessions(t, seed, c, chunks)
				rewinds.Add(int64(r))
				changed.Add(int64(ch))
			})
		}
	})
	t.Logf("%d rewinds checked, %d changed something", rewinds.Load(), changed.Load())
	if rewinds.Load() < 10000 && *propN >= 10000 {
		t.Fatalf("only %d rewinds", rewinds.Load())
	}
}

// playSessions plays the sessions iter = first, first+stride, … < -rewind.n.
func playSessions(t *testing.T, seed uint64, first, stride int) (rewinds, changed int) {
	for iter := first; iter < *propN; iter += stride {
		s := newSim(rand.New(rand.NewPCG(seed, uint64(iter))))
		steps := s.rng.IntN(40)
		for range steps {
			s.step()
			if s.rng.IntN(8) == 0 {
				if c := checkRewind(t, s, seed, iter); c {
					changed++
				}
				rewinds++
			}
		}
		if checkRewind(t, s, seed, iter) {
			changed++
		}
		rewinds++
	}
	return rewinds, changed
}

// checkRewind rewinds s at a random point, checks every property, and
// continues s from the result. It reports whether the rewind changed anything.
func checkRewind(t *testing.T, s *sim, seed uint64, iter int) bool {
	t.Helper()
	ui, api := s.ui, s.api
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d iter %d after %v: %s\nbefore:\n%s", seed, iter, s.log, fmt.Sprintf(format, args...), dump(ui, api))
	}
	uiIn, apiIn := cloneUI(ui), cloneAPI(api)

	// Rewinding to the end is a no-op.
	end := must(t)(RewindToIndex(ui, api, len(ui), Options{}))
	if end.Changed || !sameUI(end.UI, ui) || !sameAPI(end.API, api) {
		fail("rewind to the end changed something")
	}

	// A ts that is not there is an error naming it.
	if _, err := RewindToTimestamp(ui, api, s.ts+1000, Options{}); !errors.Is(err, ErrNotFound) {
		fail("missing ts: err = %v", err)
	}
	if len(ui) == 0 {
		return false
	}

	idx := s.rng.IntN(len(ui))
	opts := Options{IncludeTargetMessage: s.rng.IntN(4) == 0, SkipCleanup: s.rng.IntN(5) == 0}
	res, err := RewindToTimestamp(ui, api, ui[idx].TS, opts)
	if err != nil {
		fail("rewind: %v", err)
	}
	s.log = append(s.log, fmt.Sprintf("rewind[%d]%+v", idx, opts))
	if !sameUI(ui, uiIn) || !sameAPI(api, apiIn) {
		fail("inputs modified")
	}
	byIdx := must(t)(RewindToIndex(ui, api, idx, opts))
	if !sameResult(byIdx, res) {
		fail("RewindToIndex disagrees")
	}
	fail = func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d iter %d after %v: %s\nbefore:\n%s\nafter:\n%s", seed, iter, s.log,
			fmt.Sprintf(format, args...), dump(ui, api), dump(res.UI, res.API))
	}

	// UI: the prefix.
	cut := idx
	if opts.IncludeTargetMessage {
		cut++
	}
	if !sameUI(res.UI, ui[:cut]) {
		fail("UI is not the prefix up to %d", cut)
	}
	// API: a subsequence, by ts and role.
	j := 0
	for _, m := range res.API {
		for j < len(api) && (api[j].TS != m.TS || api[j].Role != m.Role) {
			j++
		}
		if j == len(api) {
			fail("API result is not a subsequence of the input")
		}
		j++
	}
	// Changed is exact.
	if differs := !sameUI(res.UI, ui) || !sameAPI(res.API, api); differs != res.Changed {
		fail("Changed = %v, but the result differs: %v", res.Changed, differs)
	}
	// Everything still validates.
	for _, m := range res.UI {
		if err := m.Validate(); err != nil {
			fail("%v", err)
		}
	}
	for _, m := range res.API {
		if err := m.Validate(); err != nil {
			fail("%v", err)
		}
	}
	// Effective: tools paired.
	eff := messages.Effective(res.API)
	if err := toolPairingErr(eff); err != nil {
		fail("Effective: %v", err)
	}
	// Summaries and markers match their UI events, both ways.
	uiCondense, uiTrunc := map[string]bool{}, map[string]bool{}
	for _, m := range res.UI {
		if m.ContextCondense != nil {
			uiCondense[m.ContextCondense.CondenseID] = true
		}
		if m.ContextTruncation != nil {
			uiTrunc[m.ContextTruncation.TruncationID] = true
		}
	}
	apiCondense, apiTrunc := map[string]bool{}, map[string]bool{}
	for _, m := range res.API {
		if m.IsSummary {
			apiCondense[m.CondenseID] = true
			if !uiCondense[m.CondenseID] {
				fail("summary %s kept but its condense_context message is gone", m.CondenseID)
			}
		}
		if m.IsTruncationMarker {
			apiTrunc[m.TruncationID] = true
			if !uiTrunc[m.TruncationID] {
				fail("marker %s kept but its sliding_window_truncation message is gone", m.TruncationID)
			}
		}
	}
	for id := range uiCondense {
		if !apiCondense[id] {
			fail("condense_context %s kept but its summary is gone", id)
		}
	}
	for id := range uiTrunc {
		if !apiTrunc[id] {
			fail("sliding_window_truncation %s kept but its marker is gone", id)
		}
	}
	for _, m := range eff {
		if m.IsSummary && !uiCondense[m.CondenseID] {
			fail("Effective sends summary %s without its condense_context", m.CondenseID)
		}
	}
	// Cleanup: no dangling tags, no orphaned tool blocks in the raw history.
	if !opts.SkipCleanup {
		uses, results := map[string]int{}, map[string]int{}
		for i, m := range res.API {
			if m.CondenseParent != "" && !apiCondense[m.CondenseParent] {
				fail("dangling condenseParent %s at %d", m.CondenseParent, i)
			}
			if m.TruncationParent != "" && !apiTrunc[m.TruncationParent] {
				fail("dangling truncationParent %s at %d", m.TruncationParent, i)
			}
			for _, b := range m.Content {
				switch b.Type {
				case messages.BlockToolUse:
					uses[b.ID] = i
				case messages.BlockToolResult:
					results[b.ToolUseID] = i
				}
			}
		}
		for id, i := range uses {
			if r, ok := results[id]; !ok || r <= i {
				fail("tool_use %s without a later tool_result", id)
			}
		}
		for id, i := range results {
			if u, ok := uses[id]; !ok || u >= i {
				fail("tool_result %s without an earlier tool_use", id)
			}
		}
	}
	// And rewinding the result to its end is a no-op too.
	again := must(t)(RewindToIndex(res.UI, res.API, len(res.UI), Options{}))
	if again.Changed || !sameUI(again.UI, res.UI) || !sameAPI(again.API, res.API) {
		fail("rewind of the result to its end changed something")
	}

	s.ui, s.api = res.UI, res.API
	return res.Changed
}
