"""Scala values from Python through py4j (spark._jvm): a Seq from a list and back, an Option, a
Scala object's instance, a `Long*` argument. What pipelines/delta/dv_commit.py needs to call
delta-spark's Scala API with no compiled shim.
"""
from __future__ import annotations

from typing import Any

import numpy as np


class Scala:
    """Scala values from Python through py4j."""

    def __init__(self, jvm):
        self.jvm = jvm

    def seq(self, items) -> Any:
        """An immutable Seq (Scala 2.13) of JVM objects."""
        java_list = self.jvm.java.util.ArrayList()
        for item in items:
            java_list.add(item)
        return self.jvm.scala.jdk.javaapi.CollectionConverters.asScala(java_list).toList()

    def items(self, seq) -> list:
        """A Scala Seq's elements as a Python list."""
        return list(self.jvm.scala.jdk.javaapi.CollectionConverters.asJava(seq))

    def some(self, value) -> Any:
        # py4j boxes a Python int as Integer below 2**31, else Long: Option[Long] needs the latter
        return self.jvm.scala.Option.apply(value)

    def none(self) -> Any:
        return self.jvm.scala.Option.empty()

    def module(self, name: str) -> Any:
        """A Scala object's instance (`Name$.MODULE$`): its private[pkg] methods have no static
        forwarder on the class, so py4j finds them only on the module."""
        loader = self.jvm.java.lang.Thread.currentThread().getContextClassLoader()
        cls = self.jvm.java.lang.Class.forName(f"{name}$", True, loader)
        return cls.getField("MODULE$").get(None)

    def long_seq(self, values: np.ndarray) -> Any:
        """An immutable.ArraySeq.ofLong over a long[]: the argument of a Scala `Long*`. One copy
        of the bytes over py4j, not one call per value."""
        raw = np.ascontiguousarray(values, dtype=">i8").tobytes()
        longs = self.jvm.java.nio.LongBuffer.allocate(len(values))
        longs.put(self.jvm.java.nio.ByteBuffer.wrap(bytearray(raw)).asLongBuffer())
        return self.jvm.scala.runtime.ScalaRunTime.wrapLongArray(longs.array())
