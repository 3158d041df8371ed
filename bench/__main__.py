"""``python -m bench``: the pipeline benchmark (``bench.pipeline``); ``python -m bench small``: what a
small partition costs against its floors (``bench.small``); ``python -m bench hourly``: a day as
hourly parts against the day whole (``bench.hourly``); ``python -m bench latency``: a landed file to its
change points with the real Dagster daemon (``bench.latency``)."""

import sys

if sys.argv[1:2] == ["small"]:
    from bench.small import main

    raise SystemExit(main(sys.argv[2:]))
if sys.argv[1:2] == ["hourly"]:
    from bench.hourly import main

    raise SystemExit(main(sys.argv[2:]))
if sys.argv[1:2] == ["latency"]:
    from bench.latency import main

    raise SystemExit(main(sys.argv[2:]))
from bench.pipeline import main

raise SystemExit(main())
