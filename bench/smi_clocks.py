"""SM clock, board power and throttle reasons while implementations are timed (session 33).

Why: on the H200 (700 W cap) a D 128 backward at S 4k reads ~563 TFLOP/s in the first ~50 ms
after an idle pause and ~506-512 once the board has lowered the SM clock to stay under the cap
(1980 MHz -> 1500-1755 MHz, throttle reason "SW power cap"; session 33 calls 5-6). A row timed
after peers.py's 1 s pause can land in either state, so one process read 500 and the next 572
for the same kernel. Recording the clock beside each row says which state it was timed in.

`ClockSampler` runs `nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,
clocks_throttle_reasons.active -lms N` into a file for the whole run (a file, not a pipe:
nvidia-smi buffers its output when it is not a terminal); `window(t0, t1)` summarises the
samples whose timestamps fall between two `datetime.datetime.now()` readings taken around a
timed block. nvidia-smi's timestamp is the local wall clock, like datetime.now().
"""
import datetime
import os
import shutil
import signal
import statistics
import subprocess
import tempfile

QUERY = "timestamp,clocks.sm,power.draw,clocks_throttle_reasons.active"
POWER_CAP = 0x4  # clocks_throttle_reasons: SW power cap
THERMAL = 0x20 | 0x40  # SW / HW thermal slowdown
TS_FORMAT = "%Y/%m/%d %H:%M:%S.%f"


def parse_line(line):
    """One `nvidia-smi --query-gpu=QUERY --format=csv,noheader` line -> (datetime, sm MHz,
    power W, throttle reason bits), or None for a line that is not a sample (a header, a
    "[N/A]" field, a truncated last line)."""
    parts = [p.strip() for p in line.split(",")]
    if len(parts) != 4:
        return None
    try:
        ts = datetime.datetime.strptime(parts[0], TS_FORMAT)
        mhz = float(parts[1].split()[0])
        watts = float(parts[2].split()[0])
        reasons = int(parts[3], 16)
    except (ValueError, IndexError):
        return None
    return ts, mhz, watts, reasons


def summarize(samples):
    """Samples (parse_line tuples) -> {"samples", "sm_mhz" (median), "sm_mhz_min", "power_w"
    (median), "power_capped" (fraction of samples with the SW power cap reason), "thermal"
    (fraction with a thermal reason)}; None without samples."""
    if not samples:
        return None
    mhz = [s[1] for s in samples]
    return {
        "samples": len(samples),
        "sm_mhz": round(statistics.median(mhz)),
        "sm_mhz_min": round(min(mhz)),
        "power_w": round(statistics.median(s[2] for s in samples), 1),
        "power_capped": round(sum(1 for s in samples if s[3] & POWER_CAP) / len(samples), 2),
        "thermal": round(sum(1 for s in samples if s[3] & THERMAL) / len(samples), 2),
    }


def in_window(samples, t0, t1):
    """The samples with t0 <= timestamp <= t1 (datetimes)."""
    return [s for s in samples if t0 <= s[0] <= t1]


def row_clock(samples, timed, preheat=()):
    """A row's clock: the summary of the samples inside its timed blocks (`timed`: (t0, t1)
    datetime pairs) with "window": "timed"; when none fell inside (an S 1k block lasts ~15 ms,
    shorter than the sampling period), the samples of its preheat + timed windows (`preheat`:
    the (preheat start, timed end) pairs; the preheat runs the same call back to back, so it
    holds the same clock), with "window": "preheat+timed"; None when neither has a sample."""
    got = summarize([x for w in timed for x in in_window(samples, *w)])
    if got is not None:
        return dict(got, window="timed")
    got = summarize([x for w in preheat for x in in_window(samples, *w)])
    return dict(got, window="preheat+timed") if got is not None else None


class ClockSampler:
    """nvidia-smi in the background for the sampler's life; window() reads what it wrote so far.
    available is False (and window() returns None) when nvidia-smi is missing or exits at once."""

    def __init__(self, interval_ms=20, gpu=0):
        self.proc, self.path, self.available = None, None, False
        exe = shutil.which("nvidia-smi")
        if exe is None:
            return
        fd, self.path = tempfile.mkstemp(prefix="attnkit_smi_", suffix=".csv")
        self._file = os.fdopen(fd, "w")
        # stdbuf -oL: a line per sample reaches the file at once (a program writing to a file
        # buffers ~4 KB, over a second of samples, otherwise); stop() flushes the rest anyway.
        line_buf = [shutil.which("stdbuf"), "-oL"] if shutil.which("stdbuf") else []
        self.proc = subprocess.Popen(
            line_buf + [exe, "-i", str(gpu), f"--query-gpu={QUERY}", "--format=csv,noheader",
                        "-lms", str(interval_ms)], stdout=self._file, stderr=subprocess.DEVNULL)
        self.available = True

    def samples(self):
        if not self.available:
            return []
        with open(self.path) as f:
            return [s for s in (parse_line(line) for line in f) if s is not None]

    def window(self, t0, t1):
        """Summary of the samples between datetimes t0 and t1 (None if there are none)."""
        return summarize(in_window(self.samples(), t0, t1)) if self.available else None

    def stop(self):
        """Ends nvidia-smi with SIGINT (its own "until Ctrl+C" exit, which flushes what it
        buffered); samples() and window() still read the file afterwards."""
        if self.proc is not None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
            self._file.close()

    def close(self):
        """stop(), then removes the samples' file; the sampler is unavailable afterwards."""
        self.stop()
        if self.path and os.path.exists(self.path):
            os.unlink(self.path)
        self.available = False
