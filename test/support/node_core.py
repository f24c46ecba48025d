"""Test helpers shared by several test modules (from test_node_core.py)."""

from __future__ import annotations


XACRO = """<?xml version="1.0"?>
<robot xmlns:xacro="http://www.ros.org/wiki/xacro" name="r">
  <xacro:macro name="arm" params="n"><link name="${n}"/></xacro:macro>
  <link name="base"/><xacro:arm n="l1"/>
</robot>
"""
