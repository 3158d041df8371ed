"""The windows job's parts: the window grid as Spark columns, the frames that enter and leave,
merging partial columns, the running state of the invertible families, the exact values of the
others, what a run emits, the carried state, and the session, arrival and count windows."""
