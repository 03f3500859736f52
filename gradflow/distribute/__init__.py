"""Running TF1 cluster programs on Ray: ``ClusterSpec``, ``Server`` and cluster sessions.

Importing this package registers the cluster runner with the runtime
(``runtime/remote.py``), so ``Session(server.target)`` runs on the cluster. Ray itself is
imported only when a server is started or a cluster session is created.
"""
from gradflow.distribute.cluster_spec import ClusterSpec
from gradflow.distribute.runner import ClusterRunner
from gradflow.distribute.server import Server, ServerDef
from gradflow.runtime.remote import set_target_runner

__all__ = ["ClusterSpec", "Server", "ServerDef"]

set_target_runner(ClusterRunner)
