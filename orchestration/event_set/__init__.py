"""One generated event set, drawn two ways: ``orchestration.demo_events`` samples it in Python,
byte for byte the same on every machine (the demo, the checks in CI, the ingest tests), and
``bench.generate`` samples it in Spark for volume. The property tests' ``tests.landing`` writes
its hostile records through the same lines and files."""
