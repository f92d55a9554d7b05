"""Machine metadata: names come from the CPU, and every field a result must carry is there; the
outside-load meter's arithmetic on injected readings (clock, /proc/stat, own and companions' CPU),
so no test here depends on how busy the machine is."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from benchmarks import harness, machine

REQUIRED = ("machine", "cpu", "cores", "isa", "blas", "blas_version", "threads_requested",
            "python", "numpy", "torch", "allocator")


def test_machine_name_comes_from_the_cpu_not_the_host(monkeypatch):
    monkeypatch.delenv("ASV_MACHINE", raising=False)
    xeon = {"cpu": "Intel(R) Xeon(R) CPU @ 2.20GHz", "cpu_family": "6", "cpu_model": "85",
            "cores": 2, "arch": "x86_64"}
    epyc = {"cpu": "AMD EPYC 7B13", "cpu_family": "25", "cpu_model": "1", "cores": 2,
            "arch": "x86_64"}
    assert machine.name(xeon) == "intel-xeon-f6m85-2c"
    assert machine.name(epyc) == "amd-epyc-7b13-f25m1-2c"
    assert machine.name({**epyc, "cores": 4}) != machine.name(epyc)
    monkeypatch.setenv("ASV_MACHINE", "ci")
    assert machine.name(epyc) == "ci"


def test_every_result_carries_the_machine_fields():
    info = harness.run_info("tuned")
    missing = [k for k in REQUIRED if k not in info]
    assert not missing, missing
    assert info["allocator"] == "tuned" and info["cores"] >= 1


class Readings:
    """The LoadMeter's inputs, injected: the clock, /proc/stat's busy ticks, this process's CPU
    (os.times) and each companion's (/proc/<pid>/stat), advanced by hand between start and stop."""

    def __init__(self, monkeypatch):
        self.wall, self.busy, self.own, self.companion = 100.0, 50_000, 3.0, {}
        monkeypatch.setattr(machine, "time", SimpleNamespace(perf_counter=lambda: self.wall))
        monkeypatch.setattr(machine, "_busy_jiffies", lambda: self.busy)
        monkeypatch.setattr(machine, "os", SimpleNamespace(
            times=lambda: SimpleNamespace(user=self.own, system=0.0)))
        monkeypatch.setattr(machine, "_cpu_of", lambda pid: self.companion.get(pid, 0.0))

    def advance(self, wall: float, own: float, others: float, companion: float = 0.0):
        """`wall` seconds pass; this process, another (outside) one and the companion use CPU."""
        self.wall += wall
        self.own += own
        self.companion[7] = self.companion.get(7, 0.0) + companion
        self.busy += round((own + others + companion) * machine.HZ)


def test_load_meter_counts_other_processes_cpu_per_second_of_wall(monkeypatch):
    r = Readings(monkeypatch)
    meter = machine.LoadMeter()
    meter.start()
    r.advance(wall=2.0, own=1.9, others=1.2)
    assert meter.stop() == pytest.approx(0.6)  # 1.2 s of others' CPU over 2 s
    meter.start()
    r.advance(wall=0.5, own=0.5, others=0.0)
    assert meter.stop() == 0.0  # a quiet machine


def test_load_meter_counts_companions_as_the_measured_work(monkeypatch):
    """A DDP or MPI rank's CPU (machine.COMPANIONS) is the work's own, not outside load."""
    r = Readings(monkeypatch)
    r.companion[7] = 40.0  # CPU the companion used before the interval: not counted
    meter = machine.LoadMeter()
    monkeypatch.setattr(machine, "COMPANIONS", [])
    meter.start()
    r.advance(wall=1.0, own=1.0, others=0.1, companion=0.9)
    assert meter.stop() == pytest.approx(1.0)  # an unregistered rank reads as outside load
    monkeypatch.setattr(machine, "COMPANIONS", [7])
    meter.start()
    r.advance(wall=1.0, own=1.0, others=0.1, companion=0.9)
    assert meter.stop() == pytest.approx(0.1)


def test_load_meter_without_proc_stat_gives_none(monkeypatch):
    r = Readings(monkeypatch)
    meter = machine.LoadMeter()
    meter.start()
    r.advance(wall=1.0, own=1.0, others=1.0)
    r.busy = None  # /proc/stat unreadable (not Linux)
    assert meter.stop() is None


def test_cpu_of_reads_a_process_cpu_time():
    """_cpu_of parses /proc/<pid>/stat: this process's own entry gives what os.times says (to a
    clock tick each), and a process that is gone gives 0."""
    import os

    t = os.times()
    own = machine._cpu_of(os.getpid())
    assert abs(own - (t.user + t.system)) <= 2 / machine.HZ + 1e-9, (own, t)
    assert machine._cpu_of(2**22 + 1) == 0.0  # above Linux's pid_max: no such process
