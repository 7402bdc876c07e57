// A real ACP client (the protocol's own TypeScript SDK) driving
// `agentkernel acp` over stdio, as an editor does. surface/acp/client_test.go runs
// it with the model's turns already queued on the scripted model server:
//
//   1. "Say hello"       → text
//   2. "Set x"           → execute_code (asked, allowed once; runs in the real backing kernel), then text
//   3. "Take your time"  → a stalled stream, cancelled
//   then a second agentkernel process loads the session, lists it, and forks it.
//
// Environment: AGENTKERNEL_BIN, ACP_WORKDIR, and the agent's own
// (AGENTKERNEL_MODEL, OPENAI_BASE_URL, AGENTKERNEL_DATA_DIR, ...), which
// the child inherits. It prints a JSON summary on stdout and exits 1 on the
// first broken expectation.
import { spawn } from "node:child_process";
import { appendFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const bin = process.env.AGENTKERNEL_BIN;
const cwd = process.env.ACP_WORKDIR;
const summary = { permissions: [], toolUpdates: [], chunks: {}, stops: {} };

function check(ok, what) {
  if (!ok) {
    console.error("client.mjs: " + what);
    console.log(JSON.stringify(summary));
    process.exit(1);
  }
}

// session starts `agentkernel acp` and runs op with a connected client.
async function session(op) {
  const child = spawn(bin, ["acp"], { stdio: ["pipe", "pipe", "inherit"], cwd });
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  if (process.env.ACP_TRACE) {
    // ACP_TRACE=FILE keeps what the agent wrote, for debugging.
    child.stdout.on("data", (b) => appendFileSync(process.env.ACP_TRACE, b));
  }
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  let text = "";
  let onChunk = () => {};
  const users = [];
  const app = acp
    .client({ name: "agentkernel-acp-test" })
    .onRequest(acp.methods.client.session.requestPermission, async ({ params }) => {
      summary.permissions.push({ title: params.toolCall.title, kind: params.toolCall.kind, input: params.toolCall.rawInput });
      const allow = params.options.find((o) => o.kind === "allow_once");
      return { outcome: { outcome: "selected", optionId: allow.optionId } };
    })
    .onNotification(acp.methods.client.session.update, async ({ params }) => {
      const u = params.update;
      if (u.sessionUpdate === "agent_message_chunk" && u.content.type === "text") {
        text += u.content.text;
        onChunk();
      } else if (u.sessionUpdate === "user_message_chunk" && u.content.type === "text") {
        users.push(u.content.text);
      } else if (u.sessionUpdate === "tool_call" || u.sessionUpdate === "tool_call_update") {
        summary.toolUpdates.push(u);
      } else if (u.sessionUpdate === "usage_update") {
        (summary.usageUpdates ??= []).push({ used: u.used, size: u.size, cost: u.cost });
      }
    });
  const result = await app.connectWith(stream, async (cx) => {
    const init = await cx.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
    });
    check(init.agentInfo?.name === "agentkernel", "initialize: agentInfo " + JSON.stringify(init.agentInfo));
    check(init.agentCapabilities?.loadSession === true, "initialize: no loadSession");
    const take = () => {
      const t = text;
      text = "";
      return t;
    };
    return op(cx, { take, users, firstChunk: () => new Promise((r) => (onChunk = r)) });
  });
  child.stdin.end();
  const ex = await exited;
  check(ex.code === 0, "agentkernel acp exited " + JSON.stringify(ex));
  return result;
}

const sessionId = await session(async (cx, io) => {
  const s = await cx.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
  check(typeof s.sessionId === "string" && s.sessionId.length > 0, "session/new: " + JSON.stringify(s));
  check(s.modes?.availableModes?.some((m) => m.id === "plan"), "session/new: modes " + JSON.stringify(s.modes));
  const prompt = (text) =>
    cx.request(acp.methods.agent.session.prompt, { sessionId: s.sessionId, prompt: [{ type: "text", text }] });

  let r = await prompt("Say hello");
  summary.stops.hello = r.stopReason;
  summary.chunks.hello = io.take();
  check(r.stopReason === "end_turn", "hello: stop " + r.stopReason);

  r = await prompt("Set x");
  summary.stops.code = r.stopReason;
  summary.chunks.code = io.take();
  summary.usage = r.usage;

  // The stalled turn: cancelled once its first words arrived.
  const first = io.firstChunk();
  const pending = prompt("Take your time");
  await first;
  await cx.notify(acp.methods.agent.session.cancel, { sessionId: s.sessionId });
  r = await pending;
  summary.stops.cancelled = r.stopReason;
  io.take();
  return s.sessionId;
});
summary.sessionId = sessionId;

// A new process: the session is stored, and loads with its conversation.
await session(async (cx, io) => {
  const loaded = await cx.request(acp.methods.agent.session.load, { sessionId, cwd, mcpServers: [] });
  summary.loadedModes = loaded.modes?.currentModeId;
  summary.replayedPrompts = [...io.users];
  const list = await cx.request(acp.methods.agent.session.list, { cwd });
  summary.listed = list.sessions.map((x) => x.sessionId);
  const fork = await cx.request("session/fork", { sessionId, cwd, mcpServers: [] });
  summary.forkId = fork.sessionId;
});

console.log(JSON.stringify(summary));
