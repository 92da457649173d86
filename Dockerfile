# allot's image: `allot run` (scheduler) and `allot agent` (node agent) from one image.
# Build: docker build -t allot:0.1.0 .
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip install --no-cache-dir --prefix=/install '.[live,agent]'

FROM python:3.11-slim
COPY --from=build /install /usr/local
USER 65532:65532
ENTRYPOINT ["allot"]
CMD ["run"]
