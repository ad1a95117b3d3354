"""nbgrader_config.py — nbgrader in a student's server of a cudalab course hub: the course
(NBGRADER_COURSE_ID, set by deploy/jupyterhub/jupyterhub_config.py) and the shared exchange.
A student is known to the exchange by their hub name (nbgrader reads JUPYTERHUB_USER for the
image's user jovyan). The formgrader service runs in the course directory with this same file:
nbgrader's course root is the directory it starts in."""
import os

c = get_config()  # noqa: F821  (nbgrader's config loader provides it)

c.CourseDirectory.course_id = os.environ.get("NBGRADER_COURSE_ID", "cuda101")
c.Exchange.root = os.environ.get("NBGRADER_EXCHANGE", "/srv/nbgrader/exchange")
# In a student's server the exchange knows them by their hub name, whatever the OS user is called
# (the local spawner's, or a renamed image user); not in the formgrader service, which acts for
# every student of the course.
if os.environ.get("JUPYTERHUB_USER") and not os.environ.get("JUPYTERHUB_SERVICE_NAME"):
    c.CourseDirectory.student_id = os.environ["JUPYTERHUB_USER"]
