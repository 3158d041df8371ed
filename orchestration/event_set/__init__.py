"""One generated event set: its shape (``shape``), drawn in Python (``python_draws``: the demo's
``orchestration.demo_events``, byte for byte the same on every machine, and ``bench latency``'s
landed file) and in Spark for volume (``bench.generate``); its records written as landing lines
and files (``landing_lines``), as the property tests' hostile ``tests.landing`` writes its own."""
