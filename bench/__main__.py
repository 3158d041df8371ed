"""``python -m bench``: the pipeline benchmark (``bench.pipeline``); ``python -m bench small``: what a
small partition costs against its floors (``bench.small``)."""

import sys

if sys.argv[1:2] == ["small"]:
    from bench.small import main

    raise SystemExit(main(sys.argv[2:]))
from bench.pipeline import main

raise SystemExit(main())
