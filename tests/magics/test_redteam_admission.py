"""Red team: what a hostile user (or another program) can leave where a kernel looks, and the session's
limits. The admission directory (kernel/exec/admission.c) is trusted only when it is the user's own
0700 directory or root's 1777 one, a file in it only when it is a regular file reached without a link,
the capacity file only from the directory's owner, a ticket only while its claimant's file and living
process; every wait ends after CUDALAB_GPU_WAIT. %recorded reads regular files only, within its bound;
the 65th kernel of a session and the 257th parameter fail with their limit's own message. Every case:
refused or reported clearly, no file of anyone else changed, and the next cell works.

Runs as root here (CI too), so another user is a uid given by chown: 65534 (nobody)."""
from __future__ import annotations

import fcntl
import os
import stat
import subprocess
import time
from pathlib import Path

import pytest

from conftest import execute, outputs, streams, wait_lines

CELL = "%matmul --size 16 --variant naive --reps 1 --warmup 0"
RESULT = "application/vnd.cudalab.result+json"
OTHER_UID = 65534

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: another user's files are made by chown")


def cpu_env(admission: Path, **more: str) -> dict[str, str]:
    return {"CUDALAB_BACKEND": "cpu", "CUDALAB_ADMISSION_DIR": str(admission), **more}


def fake_gpu_env(admission: Path, contexts: int | None = 1, **more: str) -> dict[str, str]:
    """A simulated GPU (a worker takes a slot as for a GPU, then the CPU computes)."""
    env = {"CUDALAB_TESTING": "1", "CUDALAB_TEST_FAKE_GPU": "1", "CUDALAB_ADMISSION_DIR": str(admission),
           "CUDALAB_GPU_IDLE_S": "600", **more}
    if contexts is not None:
        env["CUDALAB_GPU_CONTEXTS"] = str(contexts)
    return env


def private_dir(path: Path) -> Path:
    path.mkdir(mode=0o700)
    path.chmod(0o700)
    return path


def run(kc, code: str, timeout: float = 60) -> tuple[dict, list[dict]]:
    reply, msgs = execute(kc, code, timeout=timeout)
    return reply["content"], msgs


def doc_of(msgs: list[dict]) -> dict | None:
    return next((m["content"]["data"][RESULT] for m in outputs(msgs) if RESULT in m["content"].get("data", {})),
                None)


def ok(kc, code: str = CELL) -> dict | None:
    content, msgs = run(kc, code)
    assert content["status"] == "ok", content
    assert streams(msgs, "stderr") == []
    return doc_of(msgs)


def fails(kc, code: str, ename: str, *fragments: str, within_s: float = 30) -> dict:
    t0 = time.monotonic()
    content, _ = run(kc, code, timeout=within_s + 30)
    assert time.monotonic() - t0 < within_s, (code, time.monotonic() - t0)
    assert content["status"] == "error" and content["ename"] == ename, content
    for f in fragments:
        assert f in content["evalue"], (f, content["evalue"])
    return content


def victim(tmp_path: Path) -> Path:
    """Another user's private file, which nothing a kernel does may change."""
    v = tmp_path / "victim-secret"
    v.write_text("secret\n")
    v.chmod(0o600)
    os.chown(v, OTHER_UID, OTHER_UID)
    return v


def unchanged(v: Path) -> None:
    st = v.stat()
    assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == OTHER_UID, oct(st.st_mode)
    assert v.read_text() == "secret\n"


def ticket_name(key: str, q: str, uid: int, pid: int, place: int = 0) -> str:
    """A ticket's name as admission.h lays it out, placed at the front of the queue."""
    pidns = os.stat("/proc/self/ns/pid").st_ino
    return f"{key}.{q}.{place:016x}.{0:016x}.{uid}.{pidns}.{pid}.{0xabad1dea:08x}"


def held_locked(path: Path) -> int:
    """Opens path and holds an exclusive flock on it (as a waiter holds its ticket): the descriptor."""
    fd = os.open(path, os.O_RDONLY | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


# ---------------------------------------------------------------- links named like admission's files

def test_links_named_like_slot_and_turn_files_change_no_victim(start_kernel, tmp_path):
    """A symlink or hard link named like a slot, turn or capacity file, pointing at another user's 0600
    file: its mode and content stay; a spoiled slot is one slot fewer, a spoiled turn file refuses the
    timed run clearly (--shared-timing still times), and a FIFO there blocks nothing."""
    adm = private_dir(tmp_path / "admission")
    v = victim(tmp_path)
    for name in ("fake0.slot0", "fake0.turn", "fake0.capacity", "cpu.turn"):
        (adm / name).symlink_to(v)
    os.link(v, adm / "fake0.slot1")
    os.mkfifo(adm / "fake0.slot2")
    gpu = start_kernel(env=fake_gpu_env(adm, contexts=4)).kc     # slot3 is the one left
    fails(gpu, CELL, "AdmissionError", "cannot take a timed turn", f"{adm}/fake0.turn", "symbolic link",
          "--shared-timing")
    assert ok(gpu, CELL + " --shared-timing")["timing"]["gpu_alone"] is False
    sharing = doc_of(run(gpu, "%device")[1])["sharing"]
    assert sharing[0]["held"] == 4 and sharing[0]["this_kernel"] is True, sharing    # 3 spoiled + ours
    cpu = start_kernel(env=cpu_env(adm)).kc
    fails(cpu, CELL, "AdmissionError", f"{adm}/cpu.turn", "symbolic link")
    (adm / "cpu.turn").unlink()
    os.mkfifo(adm / "cpu.turn")
    fails(cpu, CELL, "AdmissionError", f"{adm}/cpu.turn", "not a regular file", within_s=10)
    (adm / "cpu.turn").unlink()
    assert ok(cpu)["timing"]["gpu_alone"] is True                # the user's own file made afresh
    unchanged(v)
    assert os.lstat(adm / "fake0.slot0").st_mode & stat.S_IFLNK


# ---------------------------------------------------------------- the directory's owner and mode

@pytest.mark.parametrize("case", ["other user's", "group-writable", "world-writable, not sticky", "symlink",
                                  "a file"])
def test_a_directory_not_to_be_trusted_is_refused(start_kernel, tmp_path, case):
    adm = tmp_path / "admission"
    if case == "symlink":
        private_dir(tmp_path / "real")
        adm.symlink_to(tmp_path / "real")
        said = "symbolic link"
    elif case == "a file":
        adm.write_text("")
        said = "not a directory"
    else:
        private_dir(adm)
        if case == "other user's":
            os.chown(adm, OTHER_UID, OTHER_UID)
            said = f"belongs to uid {OTHER_UID} with mode 0700"
        else:
            adm.chmod(0o770 if case == "group-writable" else 0o777)
            said = "with mode 0770" if case == "group-writable" else "with mode 0777"
    cpu = start_kernel(env=cpu_env(adm)).kc
    fails(cpu, CELL, "AdmissionError", f"the admission directory {adm}", said, "--shared-timing")
    assert ok(cpu, CELL + " --shared-timing")["timing"]["gpu_alone"] is False
    assert ok(cpu, "%grid --data 1000 --block 256") is not None
    gpu = start_kernel(env=fake_gpu_env(adm)).kc                 # no slot without admission, no CPU for it
    fails(gpu, CELL, "AdmissionError", f"the admission directory {adm}", said, "the cell did not run")
    assert ok(gpu, CELL + " --backend cpu --shared-timing")["backend"] == "cpu"
    inside = tmp_path / "real" if case == "symlink" else adm
    assert not inside.is_dir() or os.listdir(inside) == []          # nothing made in a directory not trusted


def test_roots_sticky_shared_directory_is_used(start_kernel, tmp_path):
    adm = tmp_path / "shared"
    adm.mkdir()
    adm.chmod(0o1777)                                            # as the course's host directory
    gpu = start_kernel(env=fake_gpu_env(adm)).kc
    assert ok(gpu)["timing"]["gpu_alone"] is True
    slot = adm / "fake0.slot0"
    assert stat.S_IMODE(slot.stat().st_mode) == 0o644            # the other users lock it too


# ---------------------------------------------------------------- the capacity file

def test_capacity_counts_only_when_the_directory_owner_wrote_it(start_kernel, tmp_path):
    """A simulated GPU has no memory to derive N from: ADMISSION_DEFAULT_SLOTS (32) unless the capacity
    file of the directory's owner says otherwise (at most ADMISSION_MAX_SLOTS, 256)."""
    adm = private_dir(tmp_path / "admission")
    kc = start_kernel(env=fake_gpu_env(adm, contexts=None)).kc
    cap = adm / "fake0.capacity"

    def contexts() -> int:
        return doc_of(run(kc, "%device")[1])["sharing"][0]["contexts"]

    cap.write_text("3\n")
    cap.chmod(0o644)
    assert contexts() == 3                                       # the owner's, not writable by others
    cap.chmod(0o666)
    assert contexts() == 32                                      # anyone could have written it
    cap.chmod(0o620)
    assert contexts() == 32
    cap.chmod(0o644)
    os.chown(cap, OTHER_UID, OTHER_UID)
    assert contexts() == 32                                      # not the directory's owner's
    os.chown(cap, 0, 0)
    cap.write_text("20000\n")
    assert contexts() == 256                                     # the owner's, bounded
    assert ok(kc)["timing"]["gpu_alone"] is True


# ---------------------------------------------------------------- forged tickets and the wait's bound

@pytest.mark.parametrize("forgery", ["dead pid", "file of another uid", "claims another uid", "not a file"])
def test_a_forged_ticket_makes_no_timed_command_wait(start_kernel, tmp_path, forgery):
    """A ticket at the front of the turn queue, held locked (as a waiter holds its own), that no waiter
    owns: the timed run takes its turn at once."""
    adm = private_dir(tmp_path / "admission")
    me = os.geteuid()
    if forgery == "dead pid":
        name = ticket_name("cpu", "t", me, dead_pid())
    elif forgery == "file of another uid":
        name = ticket_name("cpu", "t", me, os.getpid())
    elif forgery == "claims another uid":
        name = ticket_name("cpu", "t", OTHER_UID, os.getpid())
    else:
        name = ticket_name("cpu", "t", me, os.getpid())
    ticket = adm / name
    if forgery == "not a file":
        ticket.mkdir()
        fd = os.open(ticket, os.O_RDONLY)
        fcntl.flock(fd, fcntl.LOCK_EX)
    else:
        fd = held_locked(ticket)
        if forgery != "dead pid":
            os.chown(ticket, OTHER_UID, OTHER_UID)
    try:
        kc = start_kernel(env=cpu_env(adm, CUDALAB_GPU_WAIT="20")).kc
        t0 = time.monotonic()
        content, msgs = run(kc, CELL)
        assert content["status"] == "ok", content
        timing = doc_of(msgs)["timing"]
        assert timing["gpu_alone"] is True and timing["waited_ms"] < 250, timing
        assert wait_lines(msgs) == [] and time.monotonic() - t0 < 15
    finally:
        os.close(fd)


def test_gpu_wait_bounds_every_wait_for_a_turn(start_kernel, tmp_path):
    """Someone holds the turn for good, or a live waiter stays ahead for good: the timed run fails after
    CUDALAB_GPU_WAIT seconds, saying so, and the next cell works once they are gone."""
    adm = private_dir(tmp_path / "admission")
    kc = start_kernel(env=cpu_env(adm, CUDALAB_GPU_WAIT="2")).kc
    assert ok(kc)["timing"]["gpu_alone"] is True                 # makes cpu.turn
    for holder in (adm / "cpu.turn", adm / ticket_name("cpu", "t", os.geteuid(), os.getpid())):
        fd = held_locked(holder)
        try:
            t0 = time.monotonic()
            fails(kc, CELL, "GPUBusyError", "waited 2 s for other kernels' timed runs on the CPU",
                  "CUDALAB_GPU_WAIT", within_s=15)
            assert time.monotonic() - t0 >= 2
        finally:
            os.close(fd)
        if holder.name != "cpu.turn":
            holder.unlink()
        assert ok(kc)["timing"]["gpu_alone"] is True


# ---------------------------------------------------------------- %recorded reads regular files only

@pytest.mark.parametrize("kind", ["fifo", "directory", "link to /dev/zero", "huge"])
def test_recorded_reads_regular_files_only(start_kernel, tmp_path, monkeypatch, kind):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nb.ipynb").write_text("{}")
    (tmp_path / "recorded").mkdir()
    path = tmp_path / "recorded" / "nb.json"
    if kind == "fifo":
        os.mkfifo(path)
        said = "is a FIFO; recorded results are read from a regular file only"
    elif kind == "directory":
        path.mkdir()
        said = "is a directory"
    elif kind == "link to /dev/zero":
        path.symlink_to("/dev/zero")
        said = "a symbolic link"
    else:
        with open(path, "wb") as f:
            f.truncate((32 << 20) + 1)                           # sparse: past RECORDED_MAX_BYTES
        said = f"is {(32 << 20) + 1} bytes, more than recorded results may be (32 MiB)"
    kc = start_kernel(env={"CUDALAB_BACKEND": "cpu"}).kc
    fails(kc, "%recorded nb", "ValueError", "recorded/nb.json", said, within_s=10)
    assert ok(kc, "%param size 64") is None
    assert ok(kc, "%grid --data {size} --block 32") is not None


# ---------------------------------------------------------------- the session's limits

VECADD = ("__global__ void {name}(const float *A, const float *B, float *C, int n)\n"
          "{{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) C[i] = A[i] + B[i]; }}\n")


def kernel_cell(name: str) -> str:
    return f"%%kernel --for vecadd --name {name} --no-check\n" + VECADD.format(name=name)


@pytest.mark.serial    # 65 kernels started within the 60 s limit: run alone
def test_the_65th_kernel_fails_with_the_limit(start_kernel, tmp_path):
    kc = start_kernel(env={"CUDALAB_BACKEND": "cpu", "CUDALAB_CACHE_DIR": str(tmp_path / "cache")}).kc
    for i in range(64):
        content, _ = run(kc, kernel_cell(f"k{i}"), timeout=120)
        assert content["status"] == "ok", (i, content)
    fails(kc, kernel_cell("k64"), "UsageError", "a session holds at most 64 kernels of its own",
          "--name of one of them")
    listed = doc_of(run(kc, "%kernels")[1])["kernels"]
    assert len(listed) == 64 and "k64" not in [k["name"] for k in listed]
    fails(kc, "%vecadd --size 1000 --variant k64 --reps 1", "UsageError", "k64")
    content, _ = run(kc, kernel_cell("k0"), timeout=120)         # one of them replaced: room for it
    assert content["status"] == "ok", content


def test_257_param_lines_in_one_cell_give_the_limit(start_kernel):
    kc = start_kernel(env={"CUDALAB_BACKEND": "cpu"}).kc
    cell = "\n".join(f"%param p{i} {i}" for i in range(257))
    fails(kc, cell, "UsageError", "%param p256: a session holds at most 256 parameters")
    assert ok(kc, "\n".join(f"%param p{i} {i}" for i in range(256))) is None
    fails(kc, "%param one_more 1", "UsageError", "a session holds at most 256 parameters")
    assert ok(kc, "%param p0 7\n%grid --data {p0} --block 32") is not None      # a redefinition is room
