"""The local driver's JVM dies with its Python process, at once (issue #39 item 3).

PySpark starts the JVM as a child of the Python driver; the JVM leaves when its stdin (a pipe from
the driver) reads EOF, through System.exit: a graceful shutdown that runs the shutdown hooks,
while every other JVM thread goes on. A Delta write the dead driver had started was still
committed then (seen 0.3 s after a kill -9 of the driver): one table of a batch visible, the
others not, until a restart replayed the batch (DESIGN.md "What a reader sees").

`halt_when_driver_dies` adds a JVM shutdown hook that calls Runtime.halt: once the driver is gone,
the shutdown that follows its EOF stops every thread before a write can finish (hooks start
together; halt does not wait for the others). Built from JDK classes only (a MethodHandle of
Runtime.halt as a Runnable), so no Java of our own has to be compiled. A normal exit of the
driver with no streaming query running takes the hook away first, so Spark's own hooks (temporary
directories, the metastore) run as usual; an exit with a query still running keeps it: that query
must not write after its driver is gone either.
"""
from __future__ import annotations

import atexit

HALT_STATUS = 137  # as a SIGKILL'd process: nothing of the JVM's shutdown ran
HOOK_THREAD = "cdc-halt-when-driver-gone"


def halt_when_driver_dies(spark) -> None:
    """Tie the local session's JVM to this process (see the module docstring)."""
    sc = spark.sparkContext
    jvm, gateway = sc._jvm, sc._gateway
    lang, invoke = jvm.java.lang, jvm.java.lang.invoke
    runtime = lang.Runtime.getRuntime()
    halt_type = invoke.MethodType.methodType(lang.Void.TYPE, lang.Integer.TYPE)
    halt = invoke.MethodHandles.publicLookup().findVirtual(lang.Class.forName("java.lang.Runtime"), "halt",
                                                           halt_type).bindTo(runtime)
    status = gateway.new_array(lang.Object, 1)
    status[0] = HALT_STATUS
    halt_now = invoke.MethodHandles.insertArguments(halt, 0, status)  # () -> halt(HALT_STATUS)
    runnable = invoke.MethodHandleProxies.asInterfaceInstance(lang.Class.forName("java.lang.Runnable"),
                                                              halt_now)
    hook = lang.Thread(runnable, HOOK_THREAD)
    runtime.addShutdownHook(hook)
    atexit.register(_release, spark, runtime, hook)


def _release(spark, runtime, hook) -> None:
    """At a normal exit of the driver: the hook goes unless a streaming query still runs."""
    try:
        if spark.sparkContext._jsc is not None and spark.streams.active:
            return
        runtime.removeShutdownHook(hook)
    except Exception:  # noqa: BLE001 - the gateway may be gone already; the JVM then halts, as meant
        pass
