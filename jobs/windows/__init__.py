"""The windows job's parts: the window grid as Spark columns, the frames that enter and leave,
merging partial columns, the carried state, and the session, arrival and count windows."""
