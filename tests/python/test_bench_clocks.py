"""bench/smi_clocks.py (peers.py --clocks) and peers.summarize's clock table, without a GPU: the
parser on nvidia-smi lines recorded on the H200 in session 33 (call 6), and the sampler against a
stand-in nvidia-smi script on PATH."""

import datetime
import os
import stat
import sys
import time

import pytest

BENCH = os.path.join(os.path.dirname(__file__), "..", "..", "bench")
sys.path.insert(0, BENCH)
import peers  # noqa: E402
import smi_clocks  # noqa: E402

# Recorded: `nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,
# clocks_throttle_reasons.active` minus the temperature column (smi_clocks.QUERY has none).
IDLE = "2026/11/29 12:24:58.577, 345 MHz, 80.75 W, 0x0000000000000001"
BOOST = "2026/11/29 12:25:01.127, 1980 MHz, 122.69 W, 0x0000000000000000"
CAPPED = "2026/11/29 12:25:02.430, 1710 MHz, 699.15 W, 0x0000000000000004"


def test_parse_line_reads_every_field():
    ts, mhz, watts, reasons = smi_clocks.parse_line(CAPPED)
    assert ts == datetime.datetime(2026, 11, 29, 12, 25, 2, 430000)
    assert (mhz, watts, reasons) == (1710.0, 699.15, 0x4)


@pytest.mark.parametrize("line", ["", "timestamp, clocks.sm [MHz], power.draw [W], reasons",
                                  "2026/11/29 12:25:02.430, [N/A], 699.15 W, 0x4",
                                  "2026/11/29 12:25:02.430, 1710 MHz, 699"])
def test_parse_line_rejects_what_is_not_a_sample(line):
    assert smi_clocks.parse_line(line) is None


def test_summarize_counts_the_power_cap_share():
    s = [smi_clocks.parse_line(x) for x in (BOOST, CAPPED, CAPPED, IDLE)]
    c = smi_clocks.summarize(s)
    assert c["samples"] == 4
    assert c["sm_mhz"] == round((1710 + 1710) / 2)  # median of 345, 1710, 1710, 1980
    assert c["sm_mhz_min"] == 345
    assert c["power_capped"] == 0.5
    assert c["thermal"] == 0.0
    assert smi_clocks.summarize([]) is None


def test_in_window_keeps_the_ends():
    s = [smi_clocks.parse_line(x) for x in (IDLE, BOOST, CAPPED)]
    got = smi_clocks.in_window(s, s[1][0], s[2][0])
    assert [x[1] for x in got] == [1980.0, 1710.0]


def test_row_clock_prefers_the_timed_blocks():
    s = [smi_clocks.parse_line(x) for x in (IDLE, BOOST, CAPPED)]
    got = smi_clocks.row_clock(s, [(s[2][0], s[2][0])], [(s[0][0], s[2][0])])
    assert got["window"] == "timed" and got["samples"] == 1 and got["sm_mhz"] == 1710


def test_row_clock_falls_back_to_the_preheat_window():
    s = [smi_clocks.parse_line(x) for x in (IDLE, BOOST, CAPPED)]
    gap = datetime.timedelta(milliseconds=1)
    timed = [(s[2][0] + gap, s[2][0] + 2 * gap)]  # (after the last sample: none inside)
    got = smi_clocks.row_clock(s, timed, [(s[1][0], s[2][0] + 2 * gap)])
    assert got["window"] == "preheat+timed" and got["samples"] == 2
    assert smi_clocks.row_clock(s, timed) is None


def test_sampler_reads_a_stand_in_nvidia_smi(tmp_path, monkeypatch):
    fake = tmp_path / "nvidia-smi"
    # Prints a sample stamped with the current time every 20 ms, as nvidia-smi -lms 20 does.
    fake.write_text("#!/usr/bin/env python3\n"
                    "import datetime, sys, time\n"
                    "while True:\n"
                    "    t = datetime.datetime.now().strftime('%Y/%m/%d %H:%M:%S.%f')[:-3]\n"
                    "    print(t + ', 1710 MHz, 699.0 W, 0x0000000000000004', flush=True)\n"
                    "    time.sleep(0.02)\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    sampler = smi_clocks.ClockSampler(interval_ms=20)
    try:
        assert sampler.available
        t0 = datetime.datetime.now()
        time.sleep(0.5)
        c = sampler.window(t0, datetime.datetime.now())
        assert c is not None and c["samples"] >= 3
        assert c["sm_mhz"] == 1710 and c["power_capped"] == 1.0
        # A window before the sampler started has no samples.
        early = t0 - datetime.timedelta(hours=1)
        assert sampler.window(early, early + datetime.timedelta(seconds=1)) is None
    finally:
        path = sampler.path
        sampler.close()
    assert not os.path.exists(path)
    assert sampler.window(t0, datetime.datetime.now()) is None


def test_sampler_without_nvidia_smi_is_unavailable(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    sampler = smi_clocks.ClockSampler()
    assert not sampler.available
    assert sampler.samples() == []
    sampler.close()


def test_summary_prints_the_clock_table():
    row = {"pass": "bwd", "d": 128, "causal": False, "s": 4096, "status": "ok"}
    doc = {"gpu": "test", "rows": [
        dict(row, impl="attnkit:flash3", tflops=506.8,
             clock={"sm_mhz": 1710, "power_capped": 0.9}),
        dict(row, impl="torch:cudnn", tflops=506.0, clock={"sm_mhz": 1980, "power_capped": 0.0}),
        dict(row, impl="attnkit:flash3", s=1024, tflops=410.0,
             clock={"sm_mhz": 1890, "power_capped": 0.6, "window": "preheat+timed"}),
    ]}
    lines = []
    peers.summarize(doc, lines.append)
    text = "\n".join(lines)
    assert "SM clock, MHz" in text
    clock_line = [x for x in lines if x.startswith("bwd") and "1710" in x]
    assert clock_line and "1710*" in clock_line[0] and "1980 " in clock_line[0]
    pre_line = [x for x in lines if x.startswith("bwd") and "1890" in x]
    assert pre_line and "1890*^" in pre_line[0]


def test_preheat_calls_back_to_back_with_rising_indices():
    calls, syncs = [], []

    class FakeCuda:
        @staticmethod
        def synchronize():
            syncs.append(len(calls))

    class FakeTorch:
        cuda = FakeCuda

    peers.preheat(FakeTorch, calls.append, 0.05)
    assert len(calls) >= 8 and calls == list(range(len(calls)))
    assert syncs and syncs[-1] == len(calls) and all(n % 8 == 0 for n in syncs)
