"""jupyter_server_config.py — every student's single-user server of a cudalab course hub
(deploy/jupyterhub/Dockerfile installs it in /etc/jupyter; tests/deploy/test_hub_course.py gives
the servers of its live hub the same file through JUPYTER_CONFIG_PATH)."""
c = get_config()  # noqa: F821  (the server's config loader provides it)

# Kernels talk to their server over UNIX sockets in the server's runtime directory, not TCP: the
# servers of a course share a host (the local spawner, or containers of the host network), and a
# kernel's TCP ports are chosen free by its server and then bound by the kernel a moment later, so
# with many kernels starting at once (a lecture's first cell) two servers can pick the same port
# and one kernel fails to start. A socket path cannot be taken by another user's kernel.
# The server's own kernel managers only (their sockets in the runtime directory, beside the
# connection file): nbgrader's autograde, in the formgrader, runs notebooks with nbclient's
# AsyncKernelManager, whose IPC sockets would be relative to two different working directories.
c.AsyncIOLoopKernelManager.transport = "ipc"

# A kernel idle for an hour gives its CUDA context back (the hub's culler stops a whole idle server
# later); one that is running a cell is left alone however long it takes.
c.MappingKernelManager.cull_idle_timeout = 3600
c.MappingKernelManager.cull_interval = 300
c.MappingKernelManager.cull_busy = False
