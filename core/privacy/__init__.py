"""What keeps a user's secrets and machine safe: redaction of transcripts (the token rules, secret-named
values, the one Hyperscan pass) and the safety screen of proposed edits.
"""
