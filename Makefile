# agentkernel — see README.md. `scripts/test.sh` installs what these need.
GO        ?= go
PYTHON    ?= /usr/bin/python3
FUZZTIME  ?= 20s
BIN       := bin/agentkernel
GOTEST    := $(GO) test -race -count=1
# The PostgreSQL tests start their own server (or use $AGENTKERNEL_TEST_POSTGRES);
# here a missing PostgreSQL fails them instead of skipping them.
export AGENTKERNEL_REQUIRE_POSTGRES := 1

.PHONY: build wheel wheels install panel panel-check test check test-go test-norace test-load test-fuzz test-python test-python-modern test-browser screenshots bench-notebook mcp-server acp-client baseline bench clean

# A static binary (no cgo: pure-Go DNS and user lookup), which runs on any
# Linux of its architecture, Python or not. Tests need cgo for -race only.
build:
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN) ./cmd/agentkernel

# The Python package (python/): a platform wheel holding the static binary,
# into dist/. `pip install dist/agentkernel-*.whl`, then `agentkernel install
# --sys-prefix`.
wheel:
	scripts/wheel.sh

# Every platform's wheel (Linux x86_64 and aarch64, macOS arm64 and x86_64,
# cross-compiled) and the sdist, into bin/wheels: what the Python suites'
# wheel and Jupyter AI tests install and check, built once for both runs.
WHEELS := $(abspath bin/wheels)
wheels:
	rm -rf $(WHEELS) && scripts/wheel.sh --all --outdir $(WHEELS) >/dev/null

install: build
	$(BIN) install --user

# The web panel's page: surface/webview/panel/src bundled (esbuild, pinned) into
# surface/webview/static/panel.js, which is committed and embedded by go build. Run
# it after changing the page's sources; `go test ./surface/webview` fails until then.
panel: surface/webview/panel/node_modules/.package-lock.json
	cd surface/webview/panel && npm run --silent build

# The committed bundle is, byte for byte, what the sources build (rebuilt
# in memory and compared by build.mjs --check), so neither a change to the
# sources without `make panel` nor an edit to the bundle itself gets by.
# make check runs it.
panel-check: surface/webview/panel/node_modules/.package-lock.json
	cd surface/webview/panel && node build.mjs --check

surface/webview/panel/node_modules/.package-lock.json: surface/webview/panel/package.json surface/webview/panel/package-lock.json
	cd surface/webview/panel && npm ci --no-audit --no-fund --loglevel=error

test: check test-go test-norace test-load test-fuzz test-python test-python-modern test-browser

# staticcheck and deadcode, pinned, built into bin/tools.
TOOLS       := $(abspath bin/tools)
STATICCHECK := $(TOOLS)/staticcheck
DEADCODE    := $(TOOLS)/deadcode
# What deadcode finds unreachable from the binaries but the tests use, on
# purpose: the scripted model (a test double), the rewind by index that the
# property tests check the rewind by timestamp against, the notebook
# package's constructors and parser that its tests and fuzzer build with,
# and the runner's introspection of waiting starts.
DEADCODE_ALLOW := ^tests/scripted/|RewindToIndex$$|notebooks/.*unreachable func: (Parse|NewCodeCell|NewMarkdownCell)$$|unreachable func: (Local|starter)\.waiters$$

$(STATICCHECK):
	GOBIN=$(TOOLS) $(GO) install honnef.co/go/tools/cmd/staticcheck@v0.8.2

$(DEADCODE):
	GOBIN=$(TOOLS) $(GO) install golang.org/x/tools/cmd/deadcode@v0.52.0

# The Go files gofmt checks: found in the tree, not asked of git, so that
# an exported tree (git archive, a release tarball) is checked as well;
# installed packages and build outputs are not ours to format.
GOFILES = find . \( -name node_modules -o -name .git -o -name bin -o -name dist \) -prune -o -name '*.go' -type f -print0

# xargs -r: no files, no gofmt (which would read stdin); and xargs gives
# gofmt /dev/null for stdin in any case.
check: $(STATICCHECK) $(DEADCODE) panel-check
	@out=$$($(GOFILES) | xargs -0 -r gofmt -l); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...
	@out=$$($(DEADCODE) ./cmd/agentkernel ./scripts/... ./tests/browser/harness | grep -Ev '$(DEADCODE_ALLOW)'); \
		if [ -n "$$out" ]; then echo "deadcode: unreachable from the binaries (remove it, or allow it in the Makefile with a reason):"; echo "$$out"; exit 1; fi

# AGENTKERNEL_MODERN_PYTHON: the PyPI stack's Python (ipykernel 7, with
# kernel subshells), for the backing tests that need a kernel with them.
test-go: mcp-server acp-client
	AGENTKERNEL_MODERN_PYTHON=$$(scripts/modern-venv.sh) $(GOTEST) -timeout 20m ./...

# Race builds read and write sockets through the runtime's poller (the race
# detector cannot see raw system calls); this runs the raw I/O path that
# production builds use through the same socket and kernel tests.
test-norace:
	$(GO) test -count=1 -timeout 10m ./internal/zmtp ./kernel/...

# The tests of what waits on a timer once more beside a CPU hog (busy
# loops, four per core: the load of a shared CI host or a busy laptop),
# race builds made before the hog starts (scripts/underload.sh): a big
# output that comes long after its reply stays the cell's, a kernel's
# outputs and idle come through the proxy, a stalled panel client is still
# dropped and counted. 2.5 to 3.3 minutes measured on 2 cores that other
# builds shared; TestAskReadsA10MBOutput is most of it.
LOAD_TESTS := ^(TestFakeKernel|TestOutputsAfterTheReply|TestKernel|TestLocal|TestCodeMode|TestStalledClientDropped|TestTimedOutWriteIsADrop|TestAskReadsA10MBOutput)$$
test-load:
	GO=$(GO) scripts/underload.sh -run '$(LOAD_TESTS)' ./kernel/client ./backing ./surface/bridge ./surface/webview ./cmd/agentkernel

test-fuzz:
	$(GO) test -run=NONE -fuzz='^FuzzDecode$$' -fuzztime=$(FUZZTIME) ./kernel/wire
	$(GO) test -run=NONE -fuzz='^FuzzValidJSON$$' -fuzztime=$(FUZZTIME) ./kernel/wire
	$(GO) test -run=NONE -fuzz='^FuzzDecodeStream$$' -fuzztime=$(FUZZTIME) ./kernel/wire
	$(GO) test -run=NONE -fuzz='^FuzzDecodeHeader$$' -fuzztime=$(FUZZTIME) ./kernel/wire
	$(GO) test -run=NONE -fuzz='^FuzzDecodeLazy$$' -fuzztime=$(FUZZTIME) ./kernel/wire

test-python: build mcp-server acp-client wheels
	AGENTKERNEL_BIN=$(abspath $(BIN)) AGENTKERNEL_WHEELS=$(WHEELS) $(PYTHON) -m pytest tests/python -q -p no:cacheprovider

# The same suites on the stack users run today, from PyPI (JupyterLab 4,
# Notebook 7, ipykernel 7 as the backing kernel, jupyter_client 8,
# jupyter_server 2 as the gateway server): tests/python/requirements-modern.txt
# in a cached venv.
test-python-modern: build mcp-server acp-client wheels
	AGENTKERNEL_BIN=$(abspath $(BIN)) AGENTKERNEL_WHEELS=$(WHEELS) $$(scripts/modern-venv.sh) -m pytest tests/python -q -p no:cacheprovider

test-browser:
	bash tests/browser/run.sh

# A script of tests/browser ($(1)) in JupyterLab 4 with the extension built
# from labextension/ and the scripted model answering (Debian's chromium),
# in the venv of scripts/modern-venv.sh $(2) (default modern).
SHOTS := $(abspath bin/screenshots)
define lab-script
	mkdir -p $(SHOTS)
	$(GO) build -o $(SHOTS)/agentkernel ./cmd/agentkernel
	$(GO) build -o $(SHOTS)/scriptedmodel ./scripts/scriptedmodel
	cd tests/browser && npm ci --no-audit --no-fund --loglevel=error
	lab_python=$$(scripts/modern-venv.sh $(2)) && \
	  (cd labextension && npm ci --no-audit --no-fund --loglevel=error && \
	    PATH="$$(dirname $$lab_python):$$PATH" npm run --silent build >/dev/null) && \
	  cd tests/browser && LAB_PYTHON=$$lab_python AGENTKERNEL_BIN=$(SHOTS)/agentkernel \
	    SCRIPTED_BIN=$(SHOTS)/scriptedmodel LAB_EXTENSION=$(abspath python/labextension) node $(1)
endef

# The README's screenshots (docs/images/*.png), taken in JupyterLab 4
# (tests/browser/screenshots.mjs), and persona.png in Jupyter AI 3's chat
# with this machine's wheel installed (tests/browser/persona.mjs; the venv
# of scripts/modern-venv.sh jupyterai). Not part of make test.
screenshots:
	$(call lab-script,screenshots.mjs)
	rm -rf $(SHOTS)/wheel
	wheel=$$(scripts/wheel.sh --outdir $(SHOTS)/wheel 2>$(SHOTS)/wheel.log) || { cat $(SHOTS)/wheel.log >&2; exit 1; }; \
	  jupyterai_python=$$(scripts/modern-venv.sh jupyterai) && cd tests/browser && JUPYTERAI_PYTHON=$$jupyterai_python WHEEL=$$wheel SCRIPTED_BIN=$(SHOTS)/scriptedmodel node persona.mjs

# How fast the agent's notebook edits show in JupyterLab 4 (tool call to the
# cell in the DOM) and what a 2,000-cell notebook_read costs
# (tests/browser/notebookbench.mjs, p50/p90; N inserts, default 40).
bench-notebook:
	$(call lab-script,notebookbench.mjs)

# Our notebook tools beside jupyter-mcp-server 2.2.4's, in one JupyterLab
# (the venv of tests/python/requirements-peer.txt), through one MCP client
# (Python's mcp SDK): a 2,001-cell read, insert, run, edit, alternating;
# p50/p90 and the ratio (tests/browser/peerbench.mjs; N rounds, default 15),
# the baseline's column too (make baseline, BASELINE_REF).
.PHONY: bench-peer
bench-peer: export BASELINE_BIN = $(abspath $(BASELINE))
bench-peer: baseline
	$(call lab-script,peerbench.mjs,peer)

# The reference MCP server (npm's @modelcontextprotocol/server-everything)
# that the MCP tests run over stdio, pinned by tests/mcp/package-lock.json.
mcp-server: tests/mcp/node_modules/.package-lock.json

tests/mcp/node_modules/.package-lock.json: tests/mcp/package.json tests/mcp/package-lock.json
	cd tests/mcp && npm ci --no-audit --no-fund --loglevel=error

# The protocol's own ACP client (npm's @agentclientprotocol/sdk) that the
# ACP tests drive agentkernel acp with, pinned by tests/acp/package-lock.json.
acp-client: tests/acp/node_modules/.package-lock.json

tests/acp/node_modules/.package-lock.json: tests/acp/package.json tests/acp/package-lock.json
	cd tests/acp && npm ci --no-audit --no-fund --loglevel=error

# Every benchmark, printed side by side: this tree's binary beside an older
# build's (BASELINE_REF, by default the landed main: origin/main, or HEAD
# where there is no remote; built into bin/baseline) and beside the peers
# (ipykernel alone, Jupyter AI's %%ai, jupyter-mcp-server; a role without
# row-level security). `make bench BASELINE_REF=<commit>`
# compares with another commit. Figures, never assertions; the README's
# Speed table is a run of it.
BASELINE_REF ?= origin/main
BASELINE     := bin/baseline/agentkernel
baseline:
	rm -rf bin/baseline && mkdir -p bin/baseline/src
	ref=$$(git rev-parse --verify -q '$(BASELINE_REF)^{commit}' || git rev-parse HEAD) && \
	  echo "bench: the baseline is $$ref ($(BASELINE_REF))" && git archive $$ref | tar -x -C bin/baseline/src
	cd bin/baseline/src && CGO_ENABLED=0 $(GO) build -trimpath -o ../agentkernel ./cmd/agentkernel
	rm -rf bin/baseline/src

bench: build baseline
	$(GO) run ./scripts/kernelbench -agentkernel $(BIN) -baseline $(BASELINE) -gateway -ipykernel-python $$(scripts/modern-venv.sh)
	$(GO) run ./scripts/promptbench -agentkernel $(BIN) -baseline $(BASELINE) -jupyter-ai $$(scripts/modern-venv.sh aimagics)
	$(GO) run ./scripts/ckptbench -agentkernel $(BIN)
	$(GO) run ./scripts/mcpbench -agentkernel $(BIN)
	$(GO) test -run '^$$' -bench AppendRLS -benchtime 2000x ./store/
	$(GO) test -run '^$$' -bench NotebookCommRead ./surface/bridge/
	$(MAKE) --no-print-directory bench-notebook
	$(MAKE) --no-print-directory bench-peer

clean:
	rm -rf bin
