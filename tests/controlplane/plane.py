"""Start and stop a real control plane from the binaries in `../shared/k8s/`.

`ControlPlane(workdir)` makes certificates (a CA, a serving certificate for
127.0.0.1, an admin client certificate in `system:masters`, a service-account key
pair), then `start()` runs etcd and kube-apiserver on free loopback ports with
RBAC and DRA on, and writes an admin kubeconfig. `start_controller_manager()` and
`start_scheduler()` add the other components when a test needs claim templates,
Jobs, namespaces' cleanup, or the upstream scheduler as an oracle. Every process
logs to a file under `workdir/logs`, and `logs()` returns their tails for a failed
test's report.

Faults the live tests inject go through here too: `restart_apiserver()` (the
server goes away and comes back on the same port, etcd keeps the data), and an
API server started with a short `compaction_interval` so old resourceVersions
expire (410 Gone on a watch).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

# The feature gates and API versions that DRA needs, on every component (../shared/k8s/README.md).
DRA_FEATURE_GATES = ",".join(
    f"{gate}=true"
    for gate in (
        "DynamicResourceAllocation",
        "DRAAdminAccess",
        "DRAPrioritizedList",
        "DRAPartitionableDevices",
        "DRADeviceTaints",
        "DRADeviceTaintRules",
        "DRAConsumableCapacity",
        "DRAExtendedResource",
        "DRADeviceBindingConditions",
        "DRAResourceClaimDeviceStatus",
    )
)
RUNTIME_CONFIG = "resource.k8s.io/v1beta1=true,resource.k8s.io/v1beta2=true,resource.k8s.io/v1alpha3=true"
BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")
READY_TIMEOUT = 60.0


class ControlPlaneError(RuntimeError):
    """A component did not start or stop as expected; the message holds its log's tail."""


def binaries_folder() -> Path | None:
    """The folder holding the control-plane binaries, from KUBEBUILDER_ASSETS or ALLOT_K8S_BIN."""
    for variable in ("ALLOT_K8S_BIN", "KUBEBUILDER_ASSETS"):
        value = os.environ.get(variable)
        if value and all((Path(value) / name).exists() for name in BINARIES):
            return Path(value)
    return None


def skip_reason() -> str:
    return (
        "no Kubernetes control plane: set KUBEBUILDER_ASSETS (or ALLOT_K8S_BIN) to a folder holding "
        + ", ".join(BINARIES)
        + " (export KUBEBUILDER_ASSETS=$(../shared/k8s/install.sh))"
    )


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


PORT_ATTEMPTS = 5


def _on_free_ports(start: Callable[[], None], new_ports: Callable[[], None]) -> None:
    """Run `start`; while it fails because its port was taken meanwhile, take new ports and retry."""
    for attempt in range(PORT_ATTEMPTS):
        try:
            start()
            return
        except ControlPlaneError as failure:
            if attempt + 1 == PORT_ATTEMPTS or "address already in use" not in str(failure):
                raise
            new_ports()


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@dataclass
class Certificates:
    """File paths of the certificates and keys one control plane uses."""

    folder: Path
    ca_cert: Path = field(init=False)
    ca_key: Path = field(init=False)
    server_cert: Path = field(init=False)
    server_key: Path = field(init=False)
    admin_cert: Path = field(init=False)
    admin_key: Path = field(init=False)
    sa_key: Path = field(init=False)
    sa_pub: Path = field(init=False)

    def __post_init__(self) -> None:
        f = self.folder
        self.ca_cert, self.ca_key = f / "ca.crt", f / "ca.key"
        self.server_cert, self.server_key = f / "server.crt", f / "server.key"
        self.admin_cert, self.admin_key = f / "admin.crt", f / "admin.key"
        self.sa_key, self.sa_pub = f / "sa.key", f / "sa.pub"

    def make(self) -> None:
        f = self.folder
        f.mkdir(parents=True, exist_ok=True)
        _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=allot-test-ca",
                 "-keyout", "ca.key", "-out", "ca.crt", cwd=f)  # fmt: skip
        (f / "server.ext").write_text(
            "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc\n"
            "extendedKeyUsage=serverAuth\n"
        )
        self.sign("server", "/CN=kube-apiserver", extensions=f / "server.ext")
        self.sign("admin", "/O=system:masters/CN=allot-test-admin")
        _openssl("genrsa", "-out", "sa.key", "2048", cwd=f)
        _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=f)

    def sign(self, name: str, subject: str, *, extensions: Path | None = None) -> tuple[Path, Path]:
        """A key and a certificate signed by the CA (a client certificate unless `extensions` say more)."""
        f = self.folder
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", subject, "-keyout", f"{name}.key",
                 "-out", f"{name}.csr", cwd=f)  # fmt: skip
        if extensions is None:
            extensions = f / f"{name}.ext"
            extensions.write_text("extendedKeyUsage=clientAuth\n")
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                 "-days", "2", "-extfile", str(extensions), "-out", f"{name}.crt", cwd=f)  # fmt: skip
        return f / f"{name}.crt", f / f"{name}.key"


@dataclass
class Component:
    name: str
    args: list[str]
    log: Path
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        handle = self.log.open("ab")
        try:
            self.process = subprocess.Popen(
                self.args, stdout=handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True,
            )  # fmt: skip
        finally:
            handle.close()

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15.0) -> None:
        process = self.process
        if process is None:
            return
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, sig)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout)
        self.process = None

    def tail(self, lines: int = 40) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


class ControlPlane:
    """One control plane in `workdir`; see the module docstring. Use as a context manager."""

    def __init__(
        self,
        workdir: Path | str,
        *,
        binaries: Path | None = None,
        authorization: str = "RBAC",
        compaction_interval: str = "5m",
        apiserver_args: Sequence[str] = (),
    ) -> None:
        found = binaries if binaries is not None else binaries_folder()
        if found is None:
            raise ControlPlaneError(skip_reason())
        self.bin = found
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        (self.workdir / "logs").mkdir(exist_ok=True)
        self.certs = Certificates(self.workdir / "pki")
        self.authorization = authorization
        self.compaction_interval = compaction_interval
        self.extra_apiserver_args = list(apiserver_args)
        self.etcd_port = free_port()
        self.etcd_peer_port = free_port()
        self.port = free_port()
        self.components: dict[str, Component] = {}
        self.kubeconfig = self.workdir / "admin.kubeconfig"

    # -- lifecycle --------------------------------------------------------------------

    def __enter__(self) -> ControlPlane:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def start(self) -> None:
        """etcd and kube-apiserver, ready to serve, with the admin kubeconfig written.

        A port found free can be taken by another process before a server binds it (tests run
        in parallel, and outgoing connections take ports too): then new ports are tried."""
        if not self.certs.ca_cert.exists():
            self.certs.make()
        _on_free_ports(self._start_etcd, self._new_etcd_ports)
        _on_free_ports(self._start_apiserver_writing_kubeconfig, self._new_apiserver_port)

    def _new_etcd_ports(self) -> None:
        self.etcd_port, self.etcd_peer_port = free_port(), free_port()

    def _new_apiserver_port(self) -> None:
        self.port = free_port()

    def _start_apiserver_writing_kubeconfig(self) -> None:
        self._write_kubeconfig(self.kubeconfig, user={
            "client-certificate": str(self.certs.admin_cert), "client-key": str(self.certs.admin_key),
        })  # fmt: skip
        self.start_apiserver()

    def stop(self) -> None:
        for name in ("kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd"):
            component = self.components.get(name)
            if component is not None:
                component.stop()
        for component in self.components.values():
            component.stop()

    def _start_etcd(self) -> None:
        data = self.workdir / "etcd"
        peer = f"http://127.0.0.1:{self.etcd_peer_port}"
        client = f"http://127.0.0.1:{self.etcd_port}"
        args = [
            str(self.bin / "etcd"), "--data-dir", str(data), "--name", "default",
            "--listen-client-urls", client, "--advertise-client-urls", client,
            "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
            "--initial-cluster", f"default={peer}", "--unsafe-no-fsync",
            "--heartbeat-interval", "10", "--election-timeout", "100",
        ]  # fmt: skip
        component = self._launch("etcd", args)
        self._wait(component, lambda: self._http_ok(f"{client}/health"))

    def start_apiserver(self) -> None:
        c = self.certs
        args = [
            str(self.bin / "kube-apiserver"),
            f"--etcd-servers=http://127.0.0.1:{self.etcd_port}",
            "--bind-address=127.0.0.1", f"--secure-port={self.port}", "--advertise-address=127.0.0.1",
            "--endpoint-reconciler-type=none", "--service-cluster-ip-range=10.0.0.0/24",
            f"--authorization-mode={self.authorization}",
            f"--client-ca-file={c.ca_cert}", f"--tls-cert-file={c.server_cert}",
            f"--tls-private-key-file={c.server_key}",
            f"--service-account-key-file={c.sa_pub}", f"--service-account-signing-key-file={c.sa_key}",
            "--service-account-issuer=https://kubernetes.default.svc",
            f"--feature-gates={DRA_FEATURE_GATES}", f"--runtime-config={RUNTIME_CONFIG}",
            f"--etcd-compaction-interval={self.compaction_interval}",
            "--enable-priority-and-fairness=false",
            "--disable-admission-plugins=ServiceAccount",
            *self.extra_apiserver_args,
        ]  # fmt: skip
        component = self._launch("kube-apiserver", args)
        self._wait(component, lambda: self._api_ok("/readyz"))

    def stop_apiserver(self, sig: int = signal.SIGTERM) -> None:
        component = self.components.get("kube-apiserver")
        if component is not None:
            component.stop(sig)

    def restart_apiserver(self, *, down_for: float = 0.0) -> None:
        """The API server goes away (clients see refused connections) and comes back on the same port."""
        self.stop_apiserver()
        if down_for:
            time.sleep(down_for)
        self.start_apiserver()

    def start_controller_manager(self, *, extra_args: Sequence[str] = ()) -> None:
        """Claims from templates, Jobs' pods, namespace cleanup, garbage collection, service-account tokens.

        `extra_args` go last (e.g. `--controllers=-node-lifecycle-controller`: with no kubelet
        renewing leases, that controller taints every node unreachable after 40 s)."""
        c = self.certs
        port = free_port()
        args = [
            str(self.bin / "kube-controller-manager"), f"--kubeconfig={self.kubeconfig}",
            "--controllers=*", "--leader-elect=false", "--bind-address=127.0.0.1", f"--secure-port={port}",
            f"--service-account-private-key-file={c.sa_key}", f"--root-ca-file={c.ca_cert}",
            f"--feature-gates={DRA_FEATURE_GATES}", "--kube-api-qps=200", "--kube-api-burst=400",
            *extra_args,
        ]  # fmt: skip
        component = self._launch("kube-controller-manager", args)
        self._wait(component, lambda: self._https_ok(port, "/healthz"))

    def start_scheduler(self, config: str | None = None, *, extra_args: Sequence[str] = ()) -> None:
        """The upstream kube-scheduler (the oracle), ready once its informers have synced.

        `config` is a KubeSchedulerConfiguration's YAML; without a `clientConnection.kubeconfig`
        the admin kubeconfig is used. Start it *before* creating the pods it is to schedule.
        """
        port = free_port()
        args = [
            str(self.bin / "kube-scheduler"), "--bind-address=127.0.0.1", f"--secure-port={port}",
            f"--feature-gates={DRA_FEATURE_GATES}",
        ]  # fmt: skip
        if config is None:
            args += [f"--kubeconfig={self.kubeconfig}", "--leader-elect=false"]
        else:
            text = config
            if "kubeconfig:" not in text:
                if "clientConnection:" in text:
                    text = text.replace(
                        "clientConnection:", f"clientConnection:\n  kubeconfig: {self.kubeconfig}", 1
                    )
                else:
                    text += f"\nclientConnection:\n  kubeconfig: {self.kubeconfig}\n"
            path = self.workdir / "scheduler-config.yaml"
            path.write_text(text)
            args += [f"--config={path}"]
        args += list(extra_args)
        component = self._launch("kube-scheduler", args)
        # /readyz includes sched-handler-sync: its informers have synced.
        self._wait(component, lambda: self._https_ok(port, "/readyz"))

    def stop_scheduler(self) -> None:
        component = self.components.pop("kube-scheduler", None)
        if component is not None:
            component.stop()

    # -- access -----------------------------------------------------------------------

    def kubectl(self, *args: str, input: str | None = None, kubeconfig: Path | None = None,
                check: bool = True) -> str:  # fmt: skip
        """Run kubectl against this control plane; its stdout (raises with stderr when `check`)."""
        result = subprocess.run(
            [str(self.bin / "kubectl"), f"--kubeconfig={kubeconfig or self.kubeconfig}", *args],
            input=input, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        if check and result.returncode != 0:
            raise ControlPlaneError(f"kubectl {' '.join(args)}: {result.stderr.strip()}")
        return result.stdout

    def apply(self, manifest: str) -> str:
        """Create or update objects from YAML (server-side apply, so status in the YAML is ignored)."""
        return self.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input=manifest)

    def get(self, resource: str, name: str = "", *, namespace: str | None = None) -> dict[str, object]:
        args = ["get", resource, *([name] if name else []), "-o", "json"]
        if namespace:
            args += ["-n", namespace]
        result: dict[str, object] = json.loads(self.kubectl(*args))
        return result

    def request(self, method: str, path: str, body: object | None = None,
                content_type: str = "application/json") -> tuple[int, object]:  # fmt: skip
        """One HTTP request as the admin; (status, decoded JSON body)."""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(request, context=self._ssl(), timeout=30) as response:
                raw = response.read()
                return response.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as error:
            raw = error.read()
            try:
                return error.code, json.loads(raw)
            except ValueError:
                return error.code, raw.decode(errors="replace")

    def service_account_kubeconfig(
        self, namespace: str, name: str, *, duration: str = "2h", bound_pod: str | None = None
    ) -> Path:
        """A kubeconfig that authenticates as a service account (bearer token from the TokenRequest API).
        The namespace and the ServiceAccount must exist. With `bound_pod` (a pod in `namespace`) the
        token is bound to that pod, and carries its node's name as a kubelet-issued token would."""
        bound = ["--bound-object-kind=Pod", f"--bound-object-name={bound_pod}"] if bound_pod else []
        token = self.kubectl(
            "create", "token", name, "-n", namespace, f"--duration={duration}", *bound
        ).strip()
        path = self.workdir / f"sa-{namespace}-{name}{'-' + bound_pod if bound_pod else ''}.kubeconfig"
        self._write_kubeconfig(path, user={"token": token})
        return path

    def user_kubeconfig(self, user: str, groups: Sequence[str] = ()) -> Path:
        """A kubeconfig that authenticates with a client certificate for `user` in `groups`."""
        subject = "".join(f"/O={g}" for g in groups) + f"/CN={user}"
        safe = base64.urlsafe_b64encode(user.encode()).decode().rstrip("=")
        cert, key = self.certs.sign(f"user-{safe}", subject)
        path = self.workdir / f"user-{safe}.kubeconfig"
        self._write_kubeconfig(path, user={"client-certificate": str(cert), "client-key": str(key)})
        return path

    def logs(self) -> str:
        return "\n".join(f"--- {n} ---\n{c.tail()}" for n, c in self.components.items())

    # -- internals ----------------------------------------------------------------------

    def _launch(self, name: str, args: list[str]) -> Component:
        previous = self.components.get(name)
        if previous is not None:
            previous.stop()
        component = Component(name, args, self.workdir / "logs" / f"{name}.log")
        self.components[name] = component
        component.start()
        return component

    def _wait(self, component: Component, ready: object) -> None:
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            if not component.running:
                raise ControlPlaneError(f"{component.name} exited:\n{component.tail()}")
            try:
                if ready():  # type: ignore[operator]
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise ControlPlaneError(f"{component.name} not ready in {READY_TIMEOUT:.0f} s:\n{component.tail()}")

    def _ssl(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.certs.ca_cert))
        context.load_cert_chain(str(self.certs.admin_cert), str(self.certs.admin_key))
        return context

    @staticmethod
    def _http_ok(url: str) -> bool:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    @staticmethod
    def _https_ok(port: int, path: str) -> bool:
        """A component's own health endpoint (self-signed certificate, anonymous access to health paths)."""
        # Not create_default_context(): loading the system's CA store costs about 0.2 s per call.
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        try:
            with urllib.request.urlopen(
                f"https://127.0.0.1:{port}{path}", context=context, timeout=2
            ) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def _api_ok(self, path: str) -> bool:
        try:
            with urllib.request.urlopen(self.url + path, context=self._ssl(), timeout=2) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def _write_kubeconfig(self, path: Path, *, user: Mapping[str, str]) -> None:
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "test", "cluster": {"server": self.url,
                                                      "certificate-authority": str(self.certs.ca_cert)}}],
            "users": [{"name": "user", "user": dict(user)}],
            "contexts": [{"name": "test", "context": {"cluster": "test", "user": "user"}}],
            "current-context": "test",
        }  # fmt: skip
        path.write_text(json.dumps(config, indent=1))


@contextlib.contextmanager
def running(workdir: Path, **options: object) -> Iterator[ControlPlane]:
    plane = ControlPlane(workdir, **options)  # type: ignore[arg-type]
    try:
        plane.start()
        yield plane
    finally:
        plane.stop()
        shutil.rmtree(workdir / "etcd", ignore_errors=True)
