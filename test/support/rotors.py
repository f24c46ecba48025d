"""URDF helpers for the rotor tests: couplings stripped or read, datasheet rotors as links."""

from __future__ import annotations

import xml.etree.ElementTree as ET


def strip_couplings(text: str) -> str:
    root = ET.fromstring(text)
    for c in root.findall("coupling"):
        root.remove(c)
    return ET.tostring(root, encoding="unicode")


def coupled_joints_from_xml(text: str) -> dict[str, tuple[str, float]]:
    """Follower joint -> (leader joint, ratio) from the <coupling> elements (one-joint paths:
    each link's own parent joint)."""
    root = ET.fromstring(text)
    parent_joint = {j.find("child").get("link"): j.get("name") for j in root.findall("joint")}
    out = {}
    for c in root.findall("coupling"):
        pred = parent_joint[c.find("predecessor").get("link")]
        succ = parent_joint[c.find("successor").get("link")]
        out[succ] = (pred, float(c.find("ratio").get("value")))
    return out


def with_rotor_links(text: str, rotors: dict) -> tuple[str, dict[str, tuple[str, float]]]:
    """The URDF with each datasheet rotor written as a link on a continuous joint (the driven
    joint's parent, origin and axis), and the followers."""
    root = ET.fromstring(text)
    joints = {j.get("name"): j for j in root.findall("joint")}
    followers = {}
    for name, spec in rotors.items():
        joint = joints[name]
        link = ET.SubElement(root, "link", name=f"test_rotor_{name}")
        inertial = ET.SubElement(link, "inertial")
        ET.SubElement(inertial, "mass", value=str(spec.get("mass", 0.0)))
        i = spec["inertia"]
        ET.SubElement(
            inertial,
            "inertia",
            ixx=str(i[0]),
            iyy=str(i[1]),
            izz=str(i[2]),
            ixy=str(i[3]),
            ixz=str(i[4]),
            iyz=str(i[5]),
        )
        rj = ET.SubElement(root, "joint", name=f"test_rotor_{name}", type="continuous")
        ET.SubElement(rj, "parent", link=joint.find("parent").get("link"))
        ET.SubElement(rj, "child", link=f"test_rotor_{name}")
        for tag in ("origin", "axis"):
            if joint.find(tag) is not None:
                ET.SubElement(rj, tag, dict(joint.find(tag).attrib))
        followers[f"test_rotor_{name}"] = (name, float(spec["gear_ratio"]))
    return ET.tostring(root, encoding="unicode"), followers
