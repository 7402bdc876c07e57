"""Enterprise Gateway starts agentkernel as a remote kernel.

The test plays EG's side as EG's ResponseManager and RemoteProcessProxy do
it (enterprise_gateway/services/processproxies/processproxy.py), with
Debian's python3-cryptography in place of pycryptodome: a 1024-bit RSA key
pair whose public key goes to the kernel as the PEM body, a response socket,
the kernelspec argv with EG's {kernel_id}, {response_address}, {public_key}
and {port_range} substituted, the payload decoded and decrypted as
_decode_payload does, and the communication port spoken as
_send_listener_request does ({"signum": n}, {"shutdown": 1}). A real
jupyter_client BlockingKernelClient then talks to the kernel with the
connection info it sent, and the backing kernel is Debian's ipykernel.
"""

import base64
import json
import os
import random
import re
import signal
import socket
import subprocess
import time

import pytest
from cryptography.hazmat.primitives import padding as sympadding
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from jupyter_client import BlockingKernelClient

from kclient import alive, describe, descendants, wait_gone

LAUNCH_TIMEOUT = 30  # EG_KERNEL_LAUNCH_TIMEOUT's default


class ResponseManager:
    """EG's ResponseManager: the key pair and the response socket."""

    def __init__(self):
        self.private_key = rsa.generate_private_key(public_exponent=65537, key_size=1024)
        pem = self.private_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
        # ResponseManager.public_key: the PEM with header, footer and newlines stripped.
        self.public_key = (pem.replace("-----BEGIN PUBLIC KEY-----", "")
                           .replace("-----END PUBLIC KEY-----", "").replace("\n", ""))
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(128)
        self.response_address = "127.0.0.1:%d" % self.sock.getsockname()[1]

    def receive(self, timeout):
        """_process_connections: accept, read until the sender closes, decode."""
        self.sock.settimeout(timeout)
        conn, _ = self.sock.accept()
        data = ""
        with conn:
            conn.settimeout(timeout)
            while True:
                buffer = conn.recv(1024)
                if not buffer:
                    break
                data += buffer.decode("utf-8")
        return self.decode_payload(data)

    def decode_payload(self, data):
        """_decode_payload for a version 1 payload."""
        payload = json.loads(base64.b64decode(data))
        assert payload.get("version") == 1, payload
        encrypted_aes_key = base64.b64decode(payload["key"].encode())
        aes_key = self.private_key.decrypt(encrypted_aes_key, padding.PKCS1v15())
        decryptor = Cipher(algorithms.AES(aes_key), modes.ECB()).decryptor()
        encrypted = base64.b64decode(payload["conn_info"].encode())
        padded = decryptor.update(encrypted) + decryptor.finalize()
        unpadder = sympadding.PKCS7(128).unpadder()
        return json.loads((unpadder.update(padded) + unpadder.finalize()).decode())

    def close(self):
        self.sock.close()


def send_listener_request(ip, port, request, shutdown_socket=False):
    """RemoteProcessProxy._send_listener_request."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.settimeout(5)
        sock.connect((ip, port))
        sock.send(json.dumps(request).encode("utf-8"))
    finally:
        if shutdown_socket:
            try:
                sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass
        sock.close()


def kernelspec(binary, tmp_path):
    """The agentkernel kernelspec for EG (as in docs/scale-out.md, pointing at
    this build), read back as EG reads kernelspecs."""
    d = tmp_path / "kernels" / "agent_eg"
    d.mkdir(parents=True)
    (d / "kernel.json").write_text(json.dumps({
        "display_name": "Agent (code) on EG",
        "language": "python",
        "metadata": {"process_proxy": {
            "class_name": "enterprise_gateway.services.processproxies.distributed.DistributedProcessProxy"}},
        "env": {"AGENTKERNEL_LOG_LEVEL": "info"},
        "argv": [str(binary), "kernel", "--mode", "code", "--backing", "python3",
                 "--RemoteProcessProxy.kernel-id", "{kernel_id}",
                 "--RemoteProcessProxy.response-address", "{response_address}",
                 "--RemoteProcessProxy.public-key", "{public_key}",
                 "--RemoteProcessProxy.port-range", "{port_range}"],
    }))
    return json.loads((d / "kernel.json").read_text())


def format_kernel_cmd(argv, ns):
    """jupyter_client's KernelManager.format_kernel_cmd: {name} from ns."""
    pat = re.compile(r"\{([A-Za-z0-9_]+)\}")
    return [pat.sub(lambda m: ns.get(m.group(1), m.group(0)), a) for a in argv]


def in_runtime_dir(runtime):
    """Live processes whose command line names a file in runtime (the backing
    ipykernel's connection file is there)."""
    out = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().decode(errors="replace")
        except OSError:
            continue
        if str(runtime) in cmd:
            out.add(int(entry))
    return alive(out)


class Launched:
    """An agentkernel process started as EG's process proxy starts a kernel."""

    def __init__(self, binary, tmp_path, rm, kernel_id, public_key=None, port_range="0..0",
                 response_address=None, env=None, via="argv"):
        self.kernel_id = kernel_id
        self.runtime = tmp_path / "runtime"
        self.runtime.mkdir(exist_ok=True)
        spec = kernelspec(binary, tmp_path)
        ns = {
            "kernel_id": kernel_id,
            "response_address": response_address or rm.response_address,
            "public_key": public_key or rm.public_key,
            "port_range": port_range,
        }
        full_env = dict(os.environ, **spec["env"], JUPYTER_RUNTIME_DIR=str(self.runtime),
                        KERNEL_ID=kernel_id, EG_MIN_PORT_RANGE_SIZE="1000", EG_MAX_PORT_RANGE_RETRIES="5")
        if via == "argv":
            # EG's distributed, YARN … process proxies: the kernelspec's argv.
            argv = format_kernel_cmd(spec["argv"], ns)
        else:
            # EG's Kubernetes process proxy: launch_kubernetes.py puts the values
            # into the pod's environment; the pod runs the image's command.
            argv = [str(binary), "kernel", "--mode", "code", "--backing", "python3"]
            full_env.update(RESPONSE_ADDRESS=ns["response_address"], PUBLIC_KEY=ns["public_key"],
                            PORT_RANGE=ns["port_range"])
        full_env.update(env or {})
        self.stderr_path = tmp_path / "stderr.txt"
        self.stderr_file = open(self.stderr_path, "w")
        # jupyter_client's launch_kernel: a new session (process group).
        self.proc = subprocess.Popen(argv, env=full_env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=self.stderr_file,
                                     start_new_session=True)
        self.tree = {self.proc.pid}

    def stderr(self):
        self.stderr_file.flush()
        return self.stderr_path.read_text()

    def track(self):
        self.tree |= descendants(self.proc.pid)

    def cleanup(self):
        if self.proc.poll() is None:
            self.track()
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
            self.proc.wait(timeout=10)
        for p in alive(self.tree) | in_runtime_dir(self.runtime):
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        self.stderr_file.close()


@pytest.fixture
def rm():
    m = ResponseManager()
    yield m
    m.close()


@pytest.fixture
def launched(agentkernel_env, tmp_path):
    made = []

    def launch(*args, **kw):
        k = Launched(agentkernel_env["binary"], tmp_path, *args, **kw)
        made.append(k)
        return k

    yield launch
    for k in made:
        k.cleanup()


def execute(kc, code, timeout=30):
    """Run code; return (reply content, stdout text)."""
    out = []

    def hook(msg):
        if msg["header"]["msg_type"] == "stream":
            out.append(msg["content"]["text"])

    reply = kc.execute_interactive(code, timeout=timeout, output_hook=hook)
    return reply["content"], "".join(out)


def execute_after_error(kc, code, tries=5):
    """execute, again while ipykernel aborts what arrives just after an error."""
    for _ in range(tries):
        reply, out = execute(kc, code)
        if reply["status"] != "aborted":
            return reply, out
        time.sleep(0.2)
    return reply, out


def wait_for_execute_input(kc, msg_id, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            msg = kc.get_iopub_msg(timeout=0.5)
        except Exception:
            continue
        if (msg["parent_header"].get("msg_id") == msg_id
                and msg["header"]["msg_type"] == "execute_input"):
            return
    raise AssertionError("the cell never started running")


@pytest.mark.parametrize("via", ["argv", "env"])
def test_eg_launches_interrupts_polls_and_shuts_down(rm, launched, via):
    lower = random.randrange(20000, 29000)
    port_range = f"{lower}..{lower + 1000}"
    k = launched(rm, "a1b2c3d4-0000-4000-8000-eg0000000001", port_range=port_range, via=via)
    info = rm.receive(timeout=LAUNCH_TIMEOUT)

    # What EG's _setup_connection_info and _extract_pid_info read.
    assert info["kernel_id"] == k.kernel_id
    assert info["pid"] == k.proc.pid
    assert info["pgid"] == os.getpgid(k.proc.pid)
    assert info["transport"] == "tcp" and info["signature_scheme"] == "hmac-sha256" and info["key"]
    ports = [info[p] for p in ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port", "comm_port")]
    assert len(set(ports)) == 6 and all(lower <= p <= lower + 1000 for p in ports), (port_range, info)

    info["ip"] = "127.0.0.1"  # EG sets the address of the host it placed the kernel on
    comm_port = info.pop("comm_port")
    for key in ("pid", "pgid", "kernel_id"):
        info.pop(key)
    kc = BlockingKernelClient()
    kc.load_connection_info(info)
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=LAUNCH_TIMEOUT)
        reply, out = execute(kc, "x = 6 * 7\nprint(x)")
        assert reply["status"] == "ok" and out == "42\n", (reply, out)
        k.track()
        backing = k.tree - {k.proc.pid}
        assert backing, f"no backing kernel under agentkernel:{describe(k.tree)}"

        # Interrupt through the communication port, as EG's send_signal(SIGINT).
        msg_id = kc.execute("import time\ntime.sleep(60)")
        wait_for_execute_input(kc, msg_id)
        time.sleep(0.3)
        send_listener_request("127.0.0.1", comm_port, {"signum": signal.SIGINT.value})
        reply = kc.get_shell_msg(timeout=15)
        assert reply["parent_header"]["msg_id"] == msg_id
        assert reply["content"]["status"] == "error", reply["content"]
        assert reply["content"]["ename"] == "KeyboardInterrupt", reply["content"]

        # Liveness: signal 0 is answered by the connection alone and changes nothing.
        send_listener_request("127.0.0.1", comm_port, {"signum": 0})
        reply, out = execute_after_error(kc, "print(x + 1)")
        assert reply["status"] == "ok" and out == "43\n", (reply, out)
        assert k.proc.poll() is None
    finally:
        kc.stop_channels()

    # Shutdown through the communication port, as EG's shutdown_listener.
    k.track()
    send_listener_request("127.0.0.1", comm_port, {"shutdown": 1}, shutdown_socket=True)
    assert k.proc.wait(timeout=20) == 0, k.stderr()
    left = wait_gone(k.tree, timeout=10)
    assert not left, f"left running after shutdown:{describe(left)}"
    assert not in_runtime_dir(k.runtime)
    assert os.listdir(k.runtime) == [], os.listdir(k.runtime)
    with pytest.raises(ConnectionRefusedError):
        send_listener_request("127.0.0.1", comm_port, {"signum": 0})
    assert info["key"] not in k.stderr(), "the signing key is in the log"


def test_bad_public_key(rm, launched):
    k = launched(rm, "a1b2c3d4-0000-4000-8000-eg0000000002",
                 public_key=base64.b64encode(b"not a public key").decode())
    assert k.proc.wait(timeout=LAUNCH_TIMEOUT) != 0
    err = k.stderr()
    assert "bad public key" in err and "Enterprise Gateway" in err, err
    rm.sock.settimeout(0.5)
    with pytest.raises(socket.timeout):
        rm.sock.accept()  # nothing was sent
    assert not in_runtime_dir(k.runtime)


def test_unreachable_response_address(rm, launched):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    closed = "127.0.0.1:%d" % s.getsockname()[1]
    s.close()  # nobody listens there
    k = launched(rm, "a1b2c3d4-0000-4000-8000-eg0000000003", response_address=closed)
    assert k.proc.wait(timeout=LAUNCH_TIMEOUT) != 0
    err = k.stderr()
    assert f"response address {closed}" in err and "connection refused" in err, err
    left = wait_gone(in_runtime_dir(k.runtime), timeout=10)
    assert not left, f"the backing kernel outlived the failed launch:{describe(left)}"


def test_port_range_without_a_free_port(rm, launched):
    # Eleven adjacent ports, all taken; EG allows the narrow range through
    # EG_MIN_PORT_RANGE_SIZE, which it passes to its launchers.
    for _ in range(50):
        lower = random.randrange(20000, 29000)
        held = []
        try:
            for p in range(lower, lower + 11):
                s = socket.socket()
                s.bind(("0.0.0.0", p))
                s.listen(1)
                held.append(s)
            break
        except OSError:
            for s in held:
                s.close()
    else:
        pytest.fail("found no 11 free adjacent ports")
    try:
        k = launched(rm, "a1b2c3d4-0000-4000-8000-eg0000000004", port_range=f"{lower}..{lower + 10}",
                     env={"EG_MIN_PORT_RANGE_SIZE": "10"})
        assert k.proc.wait(timeout=LAUNCH_TIMEOUT) != 0
        err = k.stderr()
        assert f"port range {lower}..{lower + 10}" in err and "0 free ports" in err, err
    finally:
        for s in held:
            s.close()
