"""Tenants: who calls the gateway, with which policies, run roots and budgets."""
