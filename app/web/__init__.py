"""The web page (``make web``): a local page where anyone may ask the stored documents, the answer
streamed with its evidence and sources. Work in progress on this branch: the page, the streamed
answer and the documents list; sources one click away, follow-up questions, the documents page, the
shared secret for other addresses and the browser tests are still to come."""
