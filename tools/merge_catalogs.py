#!/usr/bin/env python3
"""Writes catalogs/clouds.json, the union of the AWS, Azure and GCP catalogues (one search over
every cloud: 43 configurations, 40 not retired). Run after editing any of the three;
tests/test_catalog.c checks the union is current."""
import json
import os

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
PARTS = ["aws", "azure", "gcp"]


def main():
    out = {
        "format": "placer-catalog/1",
        "name": "clouds",
        "description": "AWS, Azure and GCP GPU configurations in one catalogue: the union of "
        "catalogs/aws.json, azure.json and gcp.json, written by tools/merge_catalogs.py.",
        "source": "see the three catalogues; every configuration keeps its own price_source",
        "configs": [],
    }
    for p in PARTS:
        with open(os.path.join(ROOT, "catalogs", p + ".json")) as f:
            out["configs"].extend(json.load(f)["configs"])
    with open(os.path.join(ROOT, "catalogs", "clouds.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
