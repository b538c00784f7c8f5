"""A statement (Volcano ``framework.Statement``): a job's allocations, pipelines and evictions
recorded in the session, then committed together or discarded together.

Every operation changes the session at once (task status, node rows, the plugins' event handlers),
so later decisions in the same session see it. ``discard()`` undoes the operations in reverse order
and leaves the session exactly as before; ``commit()`` turns allocations into binds and evictions
into pod deletions, which the scheduler carries out when the session closes.
"""

from __future__ import annotations

from kubesched.batch.job_info import TaskInfo, TaskStatus
from kubesched.batch.operations import Evictee, Op, Operation
from kubesched.batch.session import Session


class Statement:
    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.operations: list[Operation] = []

    def has_evictions(self) -> bool:
        return any(o.op is Op.EVICT for o in self.operations)

    # -- operations ------------------------------------------------------------------------------
    def evict(self, task: TaskInfo, reason: str) -> None:
        """The task will be deleted to free its node: RELEASING now, its resources count as
        releasing on its node."""
        ssn = self.ssn
        job = ssn.jobs.get(task.job)
        previous = task.status
        if job is not None:
            job.update_task_status(task, TaskStatus.RELEASING)
        else:
            task.status = TaskStatus.RELEASING
        slot = ssn.table.slot_of.get(task.node_name, -1)
        if slot >= 0:
            ssn.add_releasing(slot, task)
        ssn.index_remove(task)
        ssn.fire_deallocate(task)
        self.operations.append(Operation(Op.EVICT, task, reason, previous, ssn.verdict_for(task)))
        ssn.touched.append(task)

    def restore(self, task: TaskInfo) -> None:
        """Undo this statement's eviction of ``task`` alone, as if it had never been evicted (a
        dry run adds a victim back to see whether the preemptor still fits without its room)."""
        for i in range(len(self.operations) - 1, -1, -1):
            o = self.operations[i]
            if o.op is Op.EVICT and o.task is task:
                del self.operations[i]
                self._unevict(o)
                return
        raise ValueError(f"task {task.name} was not evicted by this statement")

    def _unevict(self, o: Operation) -> None:
        ssn = self.ssn
        task = o.task
        job = ssn.jobs.get(task.job)
        if job is not None:
            job.update_task_status(task, o.previous)
        else:
            task.status = o.previous
        slot = ssn.table.slot_of.get(task.node_name, -1)
        if slot >= 0:
            ssn.add_releasing(slot, task, -1)
        ssn.index_add(task, slot)
        ssn.fire_allocate(task)

    def pipeline(self, task: TaskInfo, node: int | str, eviction_occurred: bool = False) -> bool:
        """Place a task on a node whose resources are still being released (PIPELINED). False when
        a plugin could not reserve what the task needs there: the placement is undone.
        ``eviction_occurred``: evictions free the room there for this task (its pod is then
        nominated to the node)."""
        ssn = self.ssn
        slot = node if isinstance(node, int) else ssn.slot_of(node)
        job = ssn.jobs[task.job]
        previous = task.status
        last = (task.last_node, task.last_status, task.eviction_occurred)
        job.update_task_status(task, TaskStatus.PIPELINED)
        task.slot = slot
        task.node_name = ssn.table.names[slot]
        task.last_node = task.node_name
        task.last_status = TaskStatus.PIPELINED
        task.eviction_occurred = eviction_occurred
        ssn.add_pipelined(slot, task)
        ssn.index_add(task, slot)
        op = Operation(Op.PIPELINE, task, "", previous)
        ssn.touched.append(task)
        if ssn.fire_allocate(task):
            self._unpipeline(op)
            task.last_node, task.last_status, task.eviction_occurred = last
            return False
        self.operations.append(op)
        return True

    def _unpipeline(self, o: Operation) -> None:
        ssn = self.ssn
        task = o.task
        slot = task.slot
        if slot >= 0:
            ssn.add_pipelined(slot, task, -1)
        ssn.jobs[task.job].update_task_status(task, o.previous)
        ssn.index_remove(task)
        task.slot = -1
        task.node_name = ""
        ssn.fire_deallocate(task)

    def allocate(self, task: TaskInfo, node: int | str) -> bool:
        """Place a task on a node with room now (ALLOCATED); the node row counts it at once. False
        when a plugin could not reserve what the task needs there: the placement is undone (Volcano
        rolls back an allocation whose event handlers failed)."""
        ssn = self.ssn
        slot = node if isinstance(node, int) else ssn.slot_of(node)
        job = ssn.jobs[task.job]
        previous = task.status
        last = (task.last_node, task.last_status)
        job.update_task_status(task, TaskStatus.ALLOCATED)
        ssn.place(task, slot)
        ssn.index_add(task, slot)
        task.last_node = task.node_name
        task.last_status = TaskStatus.ALLOCATED
        op = Operation(Op.ALLOCATE, task, "", previous)
        ssn.touched.append(task)
        if ssn.fire_allocate(task):
            self._unallocate(op)
            task.last_node, task.last_status = last
            return False
        self.operations.append(op)
        return True

    def _unallocate(self, o: Operation) -> None:
        ssn = self.ssn
        task = o.task
        ssn.index_remove(task)
        ssn.unplace(task)
        ssn.jobs[task.job].update_task_status(task, o.previous)
        ssn.fire_deallocate(task)

    # -- outcome ---------------------------------------------------------------------------------
    def discard(self) -> None:
        """Undo every operation, newest first."""
        for o in reversed(self.operations):
            if o.op is Op.EVICT:
                self._unevict(o)
            elif o.op is Op.PIPELINE:
                self._unpipeline(o)
            else:
                self._unallocate(o)
        self.operations = []

    def commit(self) -> None:
        """Evictions become pod deletions and allocations binds (carried out at session close);
        allocated tasks move to BINDING. Pipelined tasks stay pipelined for this session only."""
        ssn = self.ssn
        for o in self.operations:
            if o.op is Op.EVICT:
                ssn.to_evict.append(Evictee(o.task, o.reason, o.verdict))
                ssn.evicted.append(o.task)
            elif o.op is Op.ALLOCATE:
                job = ssn.jobs.get(o.task.job)
                if job is not None:
                    job.update_task_status(o.task, TaskStatus.BINDING)
                ssn.to_bind.append(o.task)
        self.operations = []

    def merge(self, *others: Statement) -> None:
        for s in others:
            self.operations.extend(s.operations)
            s.operations = []
