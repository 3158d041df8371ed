"""Window specs, the aggregation algebra, change-point rules and the reference oracle.

Pure Python: no Spark session and no Dagster is needed to use or test anything here.
"""
