"""The claims of one pod's scheduling cycle (upstream ``claims.go``): the pod's own claims, named
or generated from templates, in ``spec.resourceClaims`` order, followed by the claim for its
extended resources backed by DRA when it has one.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from kubesched.api.resource import ResourceClaim


@dataclass(slots=True, eq=False)
class ClaimStore:
    claims: list[ResourceClaim] = field(default_factory=list)
    #: How many of ``claims`` are the pod's own (the rest: the extended-resource claim).
    num_user_owned: int = 0
    #: The uid the in-memory extended-resource claim had before PreBind created it for real.
    extended_claim_tmp_uid: str = ""

    @classmethod
    def of(cls, user_claims: list[ResourceClaim], extended: ResourceClaim | None) -> ClaimStore:
        claims = list(user_claims)
        if extended is not None:
            claims.append(extended)
        return cls(claims, len(user_claims))

    def empty(self) -> bool:
        return not self.claims

    def __len__(self) -> int:
        return len(self.claims)

    def all(self) -> Iterator[tuple[int, ResourceClaim]]:
        return enumerate(list(self.claims))

    def all_user_claims(self) -> Iterator[tuple[int, ResourceClaim]]:
        return enumerate(self.claims[: self.num_user_owned])

    def to_allocate(self) -> Iterator[tuple[int, ResourceClaim]]:
        """The claims without an allocation, with their index in the store."""
        return ((i, c) for i, c in enumerate(list(self.claims)) if c.allocation is None)

    def extended_claim(self) -> ResourceClaim | None:
        if self.num_user_owned == len(self.claims):
            return None
        return self.claims[self.num_user_owned]

    def no_user_claim(self) -> bool:
        return self.num_user_owned == 0

    def get(self, index: int) -> ResourceClaim:
        return self.claims[index]

    def set(self, index: int, claim: ResourceClaim) -> None:
        self.claims[index] = claim

    def update_extended_claim(self, claim: ResourceClaim) -> None:
        """The extended-resource claim was created: track the real one from now on."""
        if self.num_user_owned == len(self.claims):
            raise ValueError("no extended resource claim")
        old = self.claims[self.num_user_owned]
        if old.uid != claim.uid:
            self.extended_claim_tmp_uid = old.uid
        self.claims[self.num_user_owned] = claim

    def initial_extended_claim_uid(self) -> str:
        """The uid under which Reserve signalled the extended-resource claim's allocation."""
        if self.extended_claim_tmp_uid:
            return self.extended_claim_tmp_uid
        return self.claims[self.num_user_owned].uid
