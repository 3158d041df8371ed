"""``python -m bench``: the pipeline benchmark (``bench.pipeline``)."""

from bench.pipeline import main

raise SystemExit(main())
