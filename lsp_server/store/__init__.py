"""The store's engines, each an implementation of the model's port: the embedded one
beside the workspace (``embedded``), PostgreSQL (``postgres``), the choice between them
(``selection``), the fast read path, and the check, repair and copy verbs."""
