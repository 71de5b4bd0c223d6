"""Durable run state: the contract (base), its item layout (items) and two stores."""
