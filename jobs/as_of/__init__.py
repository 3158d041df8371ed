"""Values as of an instant, the parts ``jobs.point_in_time`` and ``jobs.point_in_time_join``
share: what a read answers (``reading``), the points it may see (``points``), the as-of join
(``join``) and the windows read exactly at the instant (``exact``)."""
