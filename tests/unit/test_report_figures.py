"""The report's figures: throughputs scaled so none reads 0.0, speedups with three significant digits, spreads."""

from __future__ import annotations

from pytest_nodus.grader import report


def test_throughput_is_scaled_to_its_own_prefix():
    assert report.throughput_text(0.0077, "GB/s") == "7.7 MB/s"
    assert report.throughput_text(2.4e-7, "TF/s") == "240 kF/s"
    assert report.throughput_text(3350.0, "GB/s") == "3.35 TB/s"
    assert report.throughput_text(612.0, "TF/s") == "612 TF/s"
    assert report.throughput_text(None, "GB/s") == "-" and report.throughput_text(0.0, "GB/s") == "-"


def test_speedups_keep_three_significant_digits():
    assert report.speedup_text(0.000916) == "0.000916x"
    assert report.speedup_text(1.2345) == "1.23x"
    assert report.speedup_text(None) == "-"


def test_spread_is_the_iqr_over_the_median():
    assert report.spread_text(10.0, 0.5) == " ±5%"
    assert report.spread_text(10.0, None) == "" and report.spread_text(None, 1.0) == ""
