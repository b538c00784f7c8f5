"""apiregistration.k8s.io: the APIServices of the aggregation layer."""
