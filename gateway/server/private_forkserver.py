"""Imported first by the decision workers' forkserver (WorkerPool's preload): it was started
with serve's environment, secrets included, and the workers it forks hold the same, so it is
marked not dumpable (runner/private_process.py) before it forks any, and they inherit that."""

from gateway.runner.private_process import make_private

make_private()
