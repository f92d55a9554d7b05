"""Machine metadata: names come from the CPU, and every field a result must carry is there."""

from __future__ import annotations

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


def test_load_meter_reads_proc_stat():
    meter = machine.LoadMeter()
    meter.start()
    sum(i * i for i in range(200_000))
    load = meter.stop()
    assert load is None or load >= 0.0
