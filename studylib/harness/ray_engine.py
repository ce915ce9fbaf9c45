"""Ray as the engine of a sweep: every item one Ray task that holds a whole machine's measuring slot.

    from studylib.harness import ray_engine, sweep
    with ray_engine.connect("local") as engine, sweep.session(engine=engine):   # or "head-ip:6379"
        sweep.sweep("fig4", points, data_dir="data")

A measuring node declares one slot, ``ray start ... --resources '{"studylib_slot": 1}'`` (``local``
starts a one-node cluster that has it), and every task asks for that slot, so no two timings ever
share a machine. Where the slot nodes have GPUs each task also takes one GPU (Ray hides the GPUs
from a task that asks for none), so a GPU cluster measures on nodes that have both.

The driver (the process running the sweep) keeps the data: each result comes back with the
``machine_info()`` of the node that measured it and is saved at once, atomically, in
``<data_dir>/<that node's machine key>/<name>.json`` (``harness.data.store``). A point is pending when
no file of the cluster's machine kinds holds it, so a rerun resumes where any run stopped. A
worker or node that dies loses only its in-flight point: Ray retries it (``max_retries``), and a
point still lost is reported and left for the next run. A row is saved once per key, whatever
retries happen.
"""

from __future__ import annotations

import contextlib
import os
import socket
from urllib.parse import urlsplit

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from ..errors import StudyError
from ..native.build import check_measuring_native
from .sweep import SKIP_ERRORS, Keying, Result, progress_bar, run_parameters, save_skipped

SLOT = "studylib_slot"
WAIT_S = 10.0  # how often a waiting driver checks that a measuring slot still exists


class RayError(StudyError):
    """The Ray cluster cannot be reached or cannot measure (one line at the command line)."""


_INFO: dict = {}  # this worker process's machine_info(): its code and packages cannot change while it lives


def _info_here() -> dict:
    """This node's provenance, dated now."""
    from .data.provenance import machine_info, now_utc

    if not _INFO:
        _INFO.update(machine_info())
    return {**_INFO, "date": now_utc()}


def _on_node(payload: bytes):
    """The task: ``fn(item)`` on a node, returned with the node's provenance. ``payload`` is
    pickled by the driver so that torch, jax and the OpenMP runtime of the C++ build load only
    after the thread setting below (numpy loads with this module, under Ray's setting: no timed
    path uses numpy's BLAS); ``fn`` None only asks for the provenance."""
    ray_threads = os.environ.get("OMP_NUM_THREADS")
    if ray_threads is not None and not _set_at_start("OMP_NUM_THREADS"):
        # Ray sets OMP_NUM_THREADS to the task's CPUs (1) where the node's environment does not:
        # a measurement uses the whole machine, as a run without Ray does.
        del os.environ["OMP_NUM_THREADS"]
    try:
        fn, item = ray.cloudpickle.loads(payload)
        if fn is None:
            return "info", None, _info_here()
        try:
            return "row", fn(item), _info_here()
        except SKIP_ERRORS as e:
            return "skipped", (str(e), type(e).__name__), _info_here()
    finally:
        if ray_threads is not None:
            os.environ["OMP_NUM_THREADS"] = ray_threads  # Ray removes what it set after the task


def _set_at_start(name: str) -> bool:
    """Whether ``name`` was in this process's environment when it started (Linux: /proc)."""
    try:
        with open("/proc/self/environ", "rb") as f:
            return any(e.split(b"=", 1)[0] == name.encode() for e in f.read().split(b"\0"))
    except OSError:
        return True  # cannot tell: leave the setting alone


_task = ray.remote(_on_node)


def _reachable(address: str) -> None:
    """Fail fast, in one line, where nothing listens at ``host:port`` (Ray itself retries for long)."""
    target = urlsplit(address if "://" in address else f"tcp://{address}")
    try:
        host, port = target.hostname, target.port
    except ValueError:
        host = port = None
    if not host or not port:
        raise RayError(f"--ray takes 'local' or a cluster's HOST:PORT (e.g. 10.0.0.1:6379), got {address!r}")
    try:
        socket.create_connection((host, port), timeout=5).close()
    except OSError as e:
        raise RayError(f"cannot reach a Ray cluster at {address} ({e.strerror or e}); start one with "
                       f"`ray start --head --resources '{{\"{SLOT}\": 1}}'`, or use --ray local") from None


class RayEngine:
    """A connected Ray cluster that measures sweeps (``sweep.session(engine=...)``)."""

    def __init__(self, address: str, *, max_retries: int = 2):
        self.address = address
        self.max_retries = max_retries
        self.gpu = False  # whether every task also takes one GPU
        self.machines: dict[str, dict] = {}  # machine key -> provenance, of the measuring nodes

    def discover(self) -> None:
        """Check the cluster can measure, and learn the machine kind of each measuring node (one
        task pinned to each, holding its slot as a measurement would)."""
        nodes = [n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get(SLOT, 0) >= 1]
        if not nodes:
            raise RayError(f"the Ray cluster at {self.address} has no node with the '{SLOT}' resource, so nothing "
                           f"can measure there; start each measuring node with "
                           f"`ray start ... --resources '{{\"{SLOT}\": 1}}'`")
        self.gpu = any(n["Resources"].get("GPU", 0) >= 1 for n in nodes)
        if self.gpu:
            nodes = [n for n in nodes if n["Resources"].get("GPU", 0) >= 1]
        refs = [self._submit(None, None, NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)) for n in nodes]
        for _, _, info in ray.get(refs):
            self.machines[info["machine_key"]] = info

    def _submit(self, fn, item, strategy=None):
        options = {"resources": {SLOT: 1}, "num_gpus": 1 if self.gpu else 0, "max_retries": self.max_retries,
                   "retry_exceptions": False}
        if strategy is not None:
            options["scheduling_strategy"] = strategy
        return _task.options(**options).remote(ray.cloudpickle.dumps((fn, item)))

    def run(self, name, items, measure_one, keying: Keying, *, data_dir, progress, log) -> Result:
        """``sweep.run`` on the cluster: the pending items as tasks, each result saved as it comes."""
        files = {m: keying.data_file(data_dir, name, m) for m in self.machines}
        keys = [keying.row_key(keying.columns(it)) for it in items]
        stale = [f.stale[key] for key in dict.fromkeys(keys) for f in files.values()
                 if key in f.stale and f.serving(key) not in f.rows]
        pending = {}
        for item, key in zip(items, keys):
            if key not in pending and not any(f.serving(key) in f.rows for f in files.values()):
                pending[key] = item
        measured, lost = 0, []
        if pending:
            check_measuring_native()  # rows are the native build's (a reused row needs no build)
            bar = progress_bar(len(items), name, progress)
            bar.update(len(items) - len(pending))
            parameters = run_parameters(items, keying)
            refs = {}
            try:
                with contextlib.ExitStack() as locks:
                    for f in files.values():  # one writer per file, as a sweep without Ray
                        locks.enter_context(f.locked(parameters))
                    locked = set(files)
                    refs.update({self._submit(measure_one, item): key for key, item in pending.items()})
                    while refs:
                        done, _ = ray.wait(list(refs), num_returns=1, timeout=WAIT_S)
                        if not done:
                            self._check_slots_left(refs, lost, pending, log)
                            continue
                        key = refs.pop(done[0])
                        item = pending[key]
                        try:
                            kind, value, info = ray.get(done[0])
                        except ray.exceptions.RayTaskError as e:  # measure_one failed: stop, as a local run does
                            raise (e.cause if isinstance(e.cause, StudyError) else e) from None
                        except ray.exceptions.RayError as e:  # worker or node died, retries spent
                            lost.append(item)
                            log(f"lost {keying.describe(item)} ({type(e).__name__}); the next run measures it")
                            bar.update(1)
                            continue
                        machine = info["machine_key"]
                        f = files.setdefault(machine, keying.data_file(data_dir, name, machine))
                        if machine not in locked:  # a node of a kind that joined the cluster since
                            locks.enter_context(f.locked(parameters))
                            locked.add(machine)
                        if kind == "row" and key not in f.rows:  # a key is saved once, whatever retried
                            f.add_row(key, value, info=info)
                            measured += 1
                        elif kind == "skipped":
                            save_skipped(f, item, key, keying, value[0], value[1], info=info)
                            log(f"skipped {keying.describe(item)} on {machine}: {value[0]}")
                        bar.set_postfix_str(f"{keying.describe(item)} on {machine}", refresh=True)
                        bar.update(1)
            finally:
                for ref in refs:  # an error or Ctrl-C: what is saved stays, the rest is not measured
                    ray.cancel(ref, force=True)
                bar.close()
        result = self._result(files, items, keys, measured, lost)
        result.stale = stale
        if measured or stale:
            log(result.reuse_line(name))
        return result

    def _check_slots_left(self, refs, lost, pending, log) -> None:
        """Waiting with no measuring slot left in the cluster would hang: give the points up."""
        if ray.cluster_resources().get(SLOT, 0) >= 1:
            return
        for ref, key in list(refs.items()):
            ray.cancel(ref, force=True)
            lost.append(pending[key])
            del refs[ref]
        log(f"no node with the '{SLOT}' resource is left in the cluster: {len(lost)} point(s) not measured")

    @staticmethod
    def _result(files, items, keys, measured, lost) -> Result:
        rows, machines, skipped, answered = [], [], [], set()
        for item, key in zip(items, keys):
            # the first file holding a row that answers the key (its own, or one timed more carefully)
            found = next(((f, k) for f in files.values() for k in [f.serving(key)] if k in f.rows), None)
            if found is not None:
                rows.append(found[0].rows[found[1]])
                machines.append(found[0].folder.name)
                answered.add(key)
            else:
                skipped += [f.skipped[key] for f in files.values() if key in f.skipped][:1]
        first = next(iter(files.values()))
        return Result(rows=rows, skipped=skipped, path=str(first.path), machines=machines, measured=measured,
                      lost=lost, reused=len(answered) - measured)


@contextlib.contextmanager
def connect(address: str, *, max_retries: int = 2, log=None):
    """A RayEngine on the cluster at ``address``: "local" starts a one-node cluster here with one
    measuring slot (stopped on exit), "auto" joins the cluster this machine belongs to, HOST:PORT
    a head node's. A process already connected to that cluster (a test) is reused and stays
    connected. Raises RayError, one line, if the cluster cannot be reached or cannot measure."""
    from .data.provenance import cpu_cores

    started = False
    here = ray.get_runtime_context().gcs_address if ray.is_initialized() else None
    if address not in ("local", "auto", here):
        _reachable(address)
    if here is not None:
        if address != here:
            raise RayError(f"this process is already connected to the Ray cluster at {here}, not {address}")
    elif address == "local":
        ray.init(num_cpus=cpu_cores(), resources={SLOT: 1}, include_dashboard=False, log_to_driver=False,
                 logging_level="ERROR")
        started = True
    else:
        try:
            ray.init(address=address, log_to_driver=False, logging_level="ERROR")
        except Exception as e:  # ConnectionError, a version mismatch, ...: one line
            raise RayError(f"cannot connect to the Ray cluster at {address}: {str(e).splitlines()[0]}") from None
        started = True
    try:
        engine = RayEngine(address, max_retries=max_retries)
        engine.discover()
        if log is not None:
            log(f"ray: measuring on {', '.join(engine.machines)}, one point per node at a time"
                + (" (each with one GPU)" if engine.gpu else ""))
        yield engine
    finally:
        if started:
            ray.shutdown()
