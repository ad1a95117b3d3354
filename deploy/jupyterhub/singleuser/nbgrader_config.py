"""nbgrader_config.py — nbgrader in a student's server of a cudalab course hub: the course
(NBGRADER_COURSE_ID, set by deploy/jupyterhub/jupyterhub_config.py) and the shared exchange.
A student is known to the exchange by their hub name (nbgrader reads JUPYTERHUB_USER for the
image's user jovyan). The formgrader service runs in the course directory with this same file:
nbgrader's course root is the directory it starts in. Its collect takes a submission only from the
uid of the student it names (cudalab_exchange.py, beside this file; the uids: ../cudalab_identity.py)."""
import os
import sys

c = get_config()  # noqa: F821  (nbgrader's config loader provides it)

c.CourseDirectory.course_id = os.environ.get("NBGRADER_COURSE_ID", "cuda101")
c.Exchange.root = os.environ.get("NBGRADER_EXCHANGE", "/srv/nbgrader/exchange")
# In a student's server the exchange knows them by their hub name, whatever the OS user is called
# (the local spawner's, or a renamed image user); not in the formgrader service, which acts for
# every student of the course.
if os.environ.get("JUPYTERHUB_USER") and not os.environ.get("JUPYTERHUB_SERVICE_NAME"):
    c.CourseDirectory.student_id = os.environ["JUPYTERHUB_USER"]

# The formgrader's collect: submissions checked against their owner's uid, named by the hub's record
# (CUDALAB_UID_MAP, which jupyterhub_config.py mounts read-only into the formgrader's container)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
c.ExchangeFactory.collect = "cudalab_exchange.OwnerCheckedCollect"
c.OwnerCheckedCollect.uid_map = os.environ.get("CUDALAB_UID_MAP", "")
