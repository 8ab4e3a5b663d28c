"""Registry, tolerance table, test runner, bench (timing, roofline, peaks) and the AOT build gate."""
