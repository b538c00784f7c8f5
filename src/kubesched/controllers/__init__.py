"""What kube-controller-manager and the kubelets do in a real cluster, simulated for ``kubesched serve``
(upstream ``pkg/controller/<name>``): one module per controller, run by ``manager.py``."""
