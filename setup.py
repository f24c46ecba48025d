"""Setuptools shim: all metadata is declarative, in setup.cfg (ROS-free library only)."""

from setuptools import setup

setup()
