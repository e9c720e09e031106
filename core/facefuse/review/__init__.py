"""The review report: a shot plan's flags (review.flags), its JSON (review.report), the page
made from that JSON (review.page), and the folder that holds them (review.writing writes it:
`facefuse review` and `facefuse render --report`). See docs/review.md."""
